-- Which ledger days each extractor version has compiled: one row per day folder on disk, so a
-- day a version read and found nothing in counts as compiled, and a day a backfill has not
-- reached yet does not (it has no folder). The files of the claims source, listed by glob():
-- the hint below makes this model downstream of the source, so that a build selected from the
-- claims asset (a backfill) rebuilds it.
-- depends_on: {{ source('memc', 'claims') }}
select distinct
    regexp_extract(file, 'extractor=([^/]+)', 1) as extractor_key,
    regexp_extract(file, 'day=([0-9]{4}-[0-9]{2}-[0-9]{2})', 1)::date as ledger_day
from glob('{{ env_var("MEMC_HOME") }}/claims/extractor=*/day=*/claims.parquet')
