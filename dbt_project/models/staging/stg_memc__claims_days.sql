-- Which ledger days each extractor version has compiled: one row per day folder on disk, so a
-- day a version read and found nothing in counts as compiled, and a day a backfill has not
-- reached yet does not (it has no folder). The files of the claims source, listed by glob():
-- the hint below makes this model downstream of the source, so that a build selected from the
-- claims asset (a backfill) rebuilds it.
-- depends_on: {{ source('memc', 'claims') }}
select distinct
    {{ claims_path_extractor('file') }} as extractor_key,
    {{ claims_path_day('file') }} as ledger_day
from {{ claims_day_files(env_var('MEMC_HOME') ~ '/claims/extractor=*/day=*/claims.parquet') }}
