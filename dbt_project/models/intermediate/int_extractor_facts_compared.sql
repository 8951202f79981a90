-- Every two extractor versions on disk, the older against the newer, fact by fact, on the
-- ledger days both have compiled: what moving from_extractor -> to_extractor adds, drops and
-- changes, whichever of them is active. Versions are ordered by name, then by version number
-- (0.10.0 after 0.9.0). A fact is (source entry, subject, predicate, object, polarity): claim
-- ids differ between versions by design (the version is part of the id), so facts are matched
-- on what they say. Per (entry, subject, predicate):
--   kept     the same fact in both;
--   changed  a fact of one left unmatched beside an unmatched fact of the other (the object or
--            polarity moved: "Helio" -> "Helio Labs"), paired in object order;
--   added    a fact of the newer with no counterpart; dropped: a fact of the older with none.
-- Rebuilt each run (a table): a backfill rewrites a version's days in place.
with claims as (
    select * from {{ ref('stg_memc__claims_all_versions') }}
),

days as (
    select
        *,
        regexp_extract(extractor_key, '^(.*)-[0-9]', 1) as extractor_name,
        {{ version_parts("regexp_extract(extractor_key, '-([0-9]+([.][0-9]+)*)', 1)") }} as version_parts
    from {{ ref('stg_memc__claims_days') }}
),

compared as (
    select a.extractor_key as from_extractor, b.extractor_key as to_extractor, a.ledger_day
    from days as a
    inner join days as b
        on b.ledger_day = a.ledger_day
        and {{ struct_of({'name': 'a.extractor_name', 'parts': 'a.version_parts', 'key': 'a.extractor_key'}) }}
            < {{ struct_of({'name': 'b.extractor_name', 'parts': 'b.version_parts', 'key': 'b.extractor_key'}) }}
),

facts as (
    -- One row per fact and side; a fact quoted twice in one entry counts once.
    select
        cmp.from_extractor,
        cmp.to_extractor,
        cl.ledger_day,
        cl.extractor_key = cmp.to_extractor as is_newer,
        cl.scope,
        cl.source_entry_id,
        cl.subject_id,
        cl.predicate,
        {{ normalize_name('cl.object') }} as object_key,
        cl.polarity,
        min(cl.source_seq) as source_seq,
        min(cl.subject) as subject,
        min(cl.object) as object,
        min(cl.quote) as quote,
        min(cl.visibility) as visibility
    from claims as cl
    inner join compared as cmp
        on cmp.ledger_day = cl.ledger_day
        and cl.extractor_key in (cmp.from_extractor, cmp.to_extractor)
    group by all
),

older as (select * from facts where not is_newer),

newer as (select * from facts where is_newer),

kept as (
    select o.*, n.object as to_object, n.quote as to_quote
    from older as o
    inner join newer as n
        using (from_extractor, to_extractor, ledger_day, scope, source_entry_id, subject_id, predicate, object_key, polarity)
),

unmatched as (
    select
        f.*,
        row_number() over (
            partition by f.from_extractor, f.to_extractor, f.is_newer, f.scope, f.source_entry_id, f.subject_id, f.predicate
            order by f.object_key, f.polarity
        ) as pair_no  -- not `n`: on Spark the join below's USING column would shadow the alias n
    from facts as f
    anti join kept as k
        using (from_extractor, to_extractor, ledger_day, scope, source_entry_id, subject_id, predicate, object_key, polarity)
),

paired as (
    select
        coalesce(o.from_extractor, n.from_extractor) as from_extractor,
        coalesce(o.to_extractor, n.to_extractor) as to_extractor,
        coalesce(o.ledger_day, n.ledger_day) as ledger_day,
        case when o.object is null then 'added' when n.object is null then 'dropped' else 'changed' end as change,
        coalesce(o.scope, n.scope) as scope,
        coalesce(o.source_entry_id, n.source_entry_id) as source_entry_id,
        coalesce(o.source_seq, n.source_seq) as source_seq,
        coalesce(o.subject, n.subject) as subject,
        coalesce(o.subject_id, n.subject_id) as subject_id,
        coalesce(o.predicate, n.predicate) as predicate,
        o.object as from_object,
        n.object as to_object,
        o.polarity as from_polarity,
        n.polarity as to_polarity,
        o.quote as from_quote,
        n.quote as to_quote,
        coalesce(o.visibility, n.visibility) as visibility
    from (select * from unmatched where not is_newer) as o
    full outer join (select * from unmatched where is_newer) as n
        using (from_extractor, to_extractor, scope, source_entry_id, subject_id, predicate, pair_no)
)

select
    from_extractor, to_extractor, ledger_day, 'kept' as change,
    scope, source_entry_id, source_seq, subject, subject_id, predicate,
    object as from_object, to_object, polarity as from_polarity, polarity as to_polarity,
    quote as from_quote, to_quote, visibility
from kept
union all
select
    from_extractor, to_extractor, ledger_day, change,
    scope, source_entry_id, source_seq, subject, subject_id, predicate,
    from_object, to_object, from_polarity, to_polarity, from_quote, to_quote, visibility
from paired
