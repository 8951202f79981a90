{{ config(materialized='mart_export', location=mart_export_path('graph_sessions'), format='parquet') }}
-- Conversation sessions as graph nodes, per scope (a session id is only unique within its scope).
select
    session_key,
    scope,
    session_id,
    cast(count(*) as bigint) as entry_count,
    min(valid_at) as first_at,
    max(valid_at) as last_at,
    {{ visibility_meet('visibility') }} as visibility
from {{ ref('graph_entries') }}
where session_key is not null
group by session_key, scope, session_id
