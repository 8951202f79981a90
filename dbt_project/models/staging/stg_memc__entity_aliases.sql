-- Rename and cast only. Entity resolution may not have run (no aliases.parquet yet): then this
-- is an empty relation with the same columns, and every name is its own entity.
select
    scope,
    alias,
    normalized,
    entity_id,
    canonical_name,
    rule,
    evidence
from {{ source_or_empty(
    'memc', 'entity_aliases',
    env_var('MEMC_HOME') ~ '/claims/entities/aliases.parquet',
    {'scope': 'varchar', 'alias': 'varchar', 'normalized': 'varchar', 'entity_id': 'varchar',
     'canonical_name': 'varchar', 'rule': 'varchar', 'evidence': 'varchar[]'}
) }}
