{{ config(materialized='mart_export', location=mart_export_path('graph_entries'), format='parquet') }}
-- Ledger entries as evidence nodes of the graph: every committed entry except erasure tombstones.
-- Ids, times and visibility only: the text stays in the ledger and the evidence index, so the
-- graph holds no content an erasure would have to chase.
select
    entry_id,
    seq,
    scope,
    kind,
    session_id,
    case
        when session_id is not null then 'ses_' || left({{ sha256_hex('scope || chr(31) || session_id') }}, 24)
    end as session_key,
    actor,
    source_ref,
    valid_at,
    recorded_at,
    visibility
from {{ ref('stg_memc__ledger_entries') }}
where kind <> 'erasure'
