{{ config(materialized='mart_export', location=mart_export_path('memory_actions'), format='parquet') }}
-- The write policy as a record, exported for readers: what the fold did with every claim it
-- considered (ADD, UPDATE, DELETE, NONE), the rule that decided and the candidates it was
-- compared with. Decided by int_claim_actions_decided, incrementally by subject; this mart is
-- its Parquet export (memc's readers open the marts' files, not the warehouse).
select * from {{ ref('int_claim_actions_decided') }}
