{% macro entity_id(scope, name) -%}
    {#- Same value as memc.ids.entity_id in Python: entities are per scope, names case-folded. -#}
    'ent_' || left({{ sha256_hex(scope ~ ' || chr(31) || lower(trim(' ~ name ~ '))') }}, 24)
{%- endmacro %}

{% macro normalize_name(name) -%}
    {#- memc.ids.normalize_name: runs of white space become one space, then case-folded. The
        key entity resolution's aliases are looked up by, and how objects are compared when a
        retraction names the value it closes or two claims contradict each other. -#}
    lower(trim({{ replace_all(name, '\s+', ' ') }}))
{%- endmacro %}

{% macro within_watermark(seq_column) -%}
    {#- The watermark var (`--vars '{"watermark": N}'`), else MEMC_WATERMARK, which the state
        asset sets: a var that changes on every build makes dbt parse the whole project again
        (partial parsing compares the CLI vars), an environment variable only the files that
        read it while parsing (about 11 s of CPU against 7 for a dbt parse of this project). So
        it is read only when the model runs (`execute`): read while parsing, it made dbt parse
        the three staging models that call this again on every build (dbt's setup and parse in
        the one-message build: 1.03 s before, 0.57 s after; docs/benchmarks.md). -#}
    {%- set watermark = var('watermark') | int -%}
    {%- if watermark < 0 and execute -%}{%- set watermark = env_var('MEMC_WATERMARK', '-1') | int -%}{%- endif -%}
    {%- if watermark >= 0 -%}
        {{ seq_column }} <= {{ watermark }}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{% macro visibility_meet(visibility_column) -%}
    {#- Aggregate: who may see something derived from every row in the group.
        'public' is the identity (public meet X = X); otherwise principals in every row.
        An empty list means nobody but an administrator. -#}
    {{ list_sorted(meet_all(visibility_column)) }}
{%- endmacro %}

{% macro visibility_meet_pair(a, b) -%}
    {#- Row-wise meet of two visibility lists (same rule as memc.visibility.meet). -#}
    case
        when {{ list_has(a, "'public'") }} then {{ b }}
        when {{ list_has(b, "'public'") }} then {{ a }}
        else {{ list_common(a, b) }}
    end
{%- endmacro %}

{% macro may_see(visibility_column, principal) -%}
    {#- memc.visibility.may_see in SQL: 'public' admits everyone, otherwise the principal must be
        listed; an empty list admits nobody. principal=none is the administrator (sees all). -#}
    {%- if principal is none -%}
        true
    {%- else -%}
        ({{ list_has(visibility_column, "'public'") }} or {{ list_has(visibility_column, principal) }})
    {%- endif -%}
{%- endmacro %}

{% macro mart_export_path(name) -%}
    {#- Marts are also written as Parquet so that readers never hold the warehouse file
        (DuckDB's single-writer lock would make the next dbt build fail). The folder is the
        home's warehouse/marts unless var('marts_dir') names another: `memc compare` folds an
        extractor version into a scratch folder of its own, leaving the live marts alone. -#}
    {{ var('marts_dir', env_var('MEMC_HOME') ~ '/warehouse/marts') }}/{{ name }}.parquet
{%- endmacro %}

{% macro claims_path_extractor(path) -%}
    {#- The extractor key a claims file's path names: claims/extractor=<key>/... -#}
    regexp_extract({{ path }}, 'extractor=([^/]+)', 1)
{%- endmacro %}

{% macro claims_path_day(path) -%}
    {#- The ledger day a claims file's path names (claims/.../day=YYYY-MM-DD/...), as a date;
        NULL for a file of the flat layout, which names none. -#}
    try_cast(nullif(regexp_extract({{ path }}, 'day=([0-9]{4}-[0-9]{2}-[0-9]{2})', 1), '') as date)
{%- endmacro %}

{% macro is_email_address(name) -%}
    {#- A bare e-mail address (claims/resolve.py email_local_name reads the same shape): not an
        entity name unless entity resolution made it an alias of a person. -#}
    coalesce({{ matches_whole(name, '[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+') }}, false)
{%- endmacro %}

{% macro claims_of_touched_groups(claims, mark) -%}
    {#- Every claim of the (scope, subject, predicate) groups that received a claim above
        ``mark``: what an incremental fold model decides again. The fold never compares claims
        of two groups, so the other groups' rows stay as they are. -#}
    select c.*
    from {{ claims }} as c
    semi join (
        select distinct scope, subject_id, predicate
        from {{ claims }}
        where source_seq > {{ mark }}
    ) as t
        on t.scope is not distinct from c.scope
        and t.subject_id is not distinct from c.subject_id
        and t.predicate is not distinct from c.predicate
{%- endmacro %}
