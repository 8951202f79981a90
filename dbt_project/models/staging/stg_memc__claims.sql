-- The active extractor's claims (var extractor_key): what the state is folded from. Other
-- versions on disk are compared with it in int_extractor_facts_compared, never folded.
select {{ star_except(ref('stg_memc__claims_all_versions'), ['extractor_key', 'ledger_day']) }}
from {{ ref('stg_memc__claims_all_versions') }}
where extractor_key = '{{ var("extractor_key") }}'
