{{ config(materialized='mart_export', location=mart_export_path('entity_analytics'), format='parquet') }}
-- Derived analytics about entities: what dreaming computed from the interaction graph and wrote
-- back to the ledger as derived claims (centrality: PageRank; community: Louvain), said by no
-- one. Kept out of state_current and state_history, which hold what people stated; folded the
-- same way, per asker (a newer run's value closes the older one for whoever may see it), so a
-- row is read exactly as a state_current row: may_see(P, visibility) and P not in closed_for.
-- The compiler shows them only when a question asks about importance or groups (query/intent.py).
{{ current_claims(analytics=true) }}
