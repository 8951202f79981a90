{{ config(materialized='mart_export', location=mart_export_path('extractor_changes_by_day'), format='parquet') }}
-- Per ledger day and pair of versions, how many facts moving from the older to the newer would
-- keep, add, drop and change: the figure to read before switching the active extractor after a
-- backfill. Counts over every principal's evidence, so it has no visibility column: askers of
-- `memc sql --as` do not see it (extractor_changes has the rows, filtered per asker).
select
    from_extractor,
    to_extractor,
    ledger_day,
    count(*) filter (where change <> 'added') as from_facts,
    count(*) filter (where change <> 'dropped') as to_facts,
    count(*) filter (where change = 'kept') as kept,
    count(*) filter (where change = 'added') as added,
    count(*) filter (where change = 'dropped') as dropped,
    count(*) filter (where change = 'changed') as changed
from {{ ref('int_extractor_facts_compared') }}
group by from_extractor, to_extractor, ledger_day
order by from_extractor, to_extractor, ledger_day
