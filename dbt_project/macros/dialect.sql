{#- The few places where DuckDB's SQL and Spark SQL differ, behind adapter.dispatch: the
    default__ form is DuckDB's (dbt-duckdb, the warehouse memc builds), the spark__ form is
    Spark SQL's (dbt-spark, where the fold's unit tests also run: docs/scale.md). Lists are
    DuckDB LISTs and Spark arrays of strings. One difference is left as it is: DuckDB's list()
    keeps NULLs and Spark's collect_list drops them; the lists the fold aggregates (ids,
    names, visibility lists) hold none. -#}

{% macro list_agg(expr, distinct=false) -%}
    {#- Aggregate: the group's values as a list (distinct ones with `distinct`). -#}
    {{ return(adapter.dispatch('list_agg', 'memc')(expr, distinct)) }}
{%- endmacro %}
{% macro default__list_agg(expr, distinct) -%}list({{ 'distinct ' if distinct }}{{ expr }}){%- endmacro %}
{% macro spark__list_agg(expr, distinct) -%}{{ 'collect_set' if distinct else 'collect_list' }}({{ expr }}){%- endmacro %}

{% macro list_sorted(expr) -%}{{ return(adapter.dispatch('list_sorted', 'memc')(expr)) }}{%- endmacro %}
{% macro default__list_sorted(expr) -%}list_sort({{ expr }}){%- endmacro %}
{% macro spark__list_sorted(expr) -%}array_sort({{ expr }}){%- endmacro %}

{% macro list_unique(expr) -%}{{ return(adapter.dispatch('list_unique', 'memc')(expr)) }}{%- endmacro %}
{% macro default__list_unique(expr) -%}list_distinct({{ expr }}){%- endmacro %}
{% macro spark__list_unique(expr) -%}array_distinct({{ expr }}){%- endmacro %}

{% macro list_has(list, value) -%}{{ return(adapter.dispatch('list_has', 'memc')(list, value)) }}{%- endmacro %}
{% macro default__list_has(list, value) -%}list_contains({{ list }}, {{ value }}){%- endmacro %}
{% macro spark__list_has(list, value) -%}array_contains({{ list }}, {{ value }}){%- endmacro %}

{% macro list_has_every(list, others) -%}
    {#- Whether `list` holds every element of `others`. -#}
    {{ return(adapter.dispatch('list_has_every', 'memc')(list, others)) }}
{%- endmacro %}
{% macro default__list_has_every(list, others) -%}list_has_all({{ list }}, {{ others }}){%- endmacro %}
{% macro spark__list_has_every(list, others) -%}(size(array_except({{ others }}, {{ list }})) = 0){%- endmacro %}

{% macro list_common(a, b) -%}{{ return(adapter.dispatch('list_common', 'memc')(a, b)) }}{%- endmacro %}
{% macro default__list_common(a, b) -%}list_intersect({{ a }}, {{ b }}){%- endmacro %}
{% macro spark__list_common(a, b) -%}array_intersect({{ a }}, {{ b }}){%- endmacro %}

{% macro list_concat(a, b) -%}{{ return(adapter.dispatch('list_concat', 'memc')(a, b)) }}{%- endmacro %}
{% macro default__list_concat(a, b) -%}({{ a }} || {{ b }}){%- endmacro %}
{% macro spark__list_concat(a, b) -%}concat({{ a }}, {{ b }}){%- endmacro %}

{% macro list_of(expr) -%}{{ return(adapter.dispatch('list_of', 'memc')(expr)) }}{%- endmacro %}
{% macro default__list_of(expr) -%}[{{ expr }}]{%- endmacro %}
{% macro spark__list_of(expr) -%}array({{ expr }}){%- endmacro %}

{% macro unnest_list(expr) -%}
    {#- In a select list: one row for each element of a list. -#}
    {{ return(adapter.dispatch('unnest_list', 'memc')(expr)) }}
{%- endmacro %}
{% macro default__unnest_list(expr) -%}unnest({{ expr }}){%- endmacro %}
{% macro spark__unnest_list(expr) -%}explode({{ expr }}){%- endmacro %}

{#- flatten() is the same in both; a macro so that it nests with the others as a string. -#}
{% macro list_flatten(expr) -%}flatten({{ expr }}){%- endmacro %}

{% macro empty_text_list() -%}{{ return(adapter.dispatch('empty_text_list', 'memc')()) }}{%- endmacro %}
{% macro default__empty_text_list() -%}[]::varchar[]{%- endmacro %}
{% macro spark__empty_text_list() -%}cast(array() as array<string>){%- endmacro %}

{% macro unnest_pair(a, b) -%}
    {#- In a select list: one row for each of two values. -#}
    {{ return(adapter.dispatch('unnest_pair', 'memc')(a, b)) }}
{%- endmacro %}
{% macro default__unnest_pair(a, b) -%}unnest([{{ a }}, {{ b }}]){%- endmacro %}
{% macro spark__unnest_pair(a, b) -%}explode(array({{ a }}, {{ b }})){%- endmacro %}

{% macro struct_of(fields) -%}
    {#- A struct value from {name: expression} (insertion order kept); structs compare field by
        field in both engines, so min() of them picks by the first field. -#}
    {{ return(adapter.dispatch('struct_of', 'memc')(fields)) }}
{%- endmacro %}
{% macro default__struct_of(fields) -%}{ {%- for name, expr in fields.items() %}'{{ name }}': {{ expr }}{{ ", " if not loop.last }}{% endfor -%} }{%- endmacro %}
{% macro spark__struct_of(fields) -%}named_struct({%- for name, expr in fields.items() %}'{{ name }}', {{ expr }}{{ ", " if not loop.last }}{% endfor -%}){%- endmacro %}

{% macro timestamp_literal(text) -%}{{ return(adapter.dispatch('timestamp_literal', 'memc')(text)) }}{%- endmacro %}
{% macro default__timestamp_literal(text) -%}timestamptz '{{ text }}'{%- endmacro %}
{% macro spark__timestamp_literal(text) -%}timestamp '{{ text }}'{%- endmacro %}

{% macro sha256_hex(expr) -%}{{ return(adapter.dispatch('sha256_hex', 'memc')(expr)) }}{%- endmacro %}
{% macro default__sha256_hex(expr) -%}sha256({{ expr }}){%- endmacro %}
{% macro spark__sha256_hex(expr) -%}sha2({{ expr }}, 256){%- endmacro %}

{% macro replace_all(expr, pattern, replacement) -%}{{ return(adapter.dispatch('replace_all', 'memc')(expr, pattern, replacement)) }}{%- endmacro %}
{% macro default__replace_all(expr, pattern, replacement) -%}regexp_replace({{ expr }}, '{{ pattern }}', '{{ replacement }}', 'g'){%- endmacro %}
{% macro spark__replace_all(expr, pattern, replacement) -%}regexp_replace({{ expr }}, '{{ pattern | replace("\\", "\\\\") }}', '{{ replacement }}'){%- endmacro %}

{% macro matches_whole(expr, pattern) -%}{{ return(adapter.dispatch('matches_whole', 'memc')(expr, pattern)) }}{%- endmacro %}
{% macro default__matches_whole(expr, pattern) -%}regexp_full_match({{ expr }}, '{{ pattern }}'){%- endmacro %}
{% macro spark__matches_whole(expr, pattern) -%}({{ expr }} rlike '^{{ pattern | replace("\\", "\\\\") }}$'){%- endmacro %}

{% macro meet_all(visibility_column) -%}
    {#- Aggregate: visibility_meet's fold over the group's distinct lists. The meet is idempotent
        (a meet a = a), so folding each distinct list once gives the same value; folding every
        row's list took 38 s of the entities mart at 1M entries (~900 mentions an entity: DuckDB's
        list_reduce grows with the lists' length) against 1 s over the few distinct ones. -#}
    {{ return(adapter.dispatch('meet_all', 'memc')(visibility_column)) }}
{%- endmacro %}
{% macro default__meet_all(visibility_column) -%}
    list_reduce(list(distinct {{ visibility_column }}), lambda a, b: {{ visibility_meet_pair('a', 'b') }})
{%- endmacro %}
{% macro spark__meet_all(visibility_column) -%}
    {#- 'public' is the meet's identity, so the fold may start from it. -#}
    aggregate(collect_set({{ visibility_column }}), array('public'), (a, b) -> {{ visibility_meet_pair('a', 'b') }})
{%- endmacro %}

{% macro spark__safe_cast(field, type) -%}
    {#- dbt's unit-test fixtures on Spark: the fixtures write lists as DuckDB reads them from text
        ("[public]", "[ana, bo]", "[]"); Spark cannot cast text to an array, so such a value
        becomes array('public', ...). Anything else goes to dbt-spark's own macro. -#}
    {%- if field is string and type.lower().startswith('array<string') and field.startswith("'[") and field.endswith("]'") -%}
        {%- set inner = field[2:-2].strip() -%}
        {%- if inner -%}
            array({%- for v in inner.split(',') %}'{{ v.strip() }}'{{ ", " if not loop.last }}{% endfor -%})
        {%- else -%}
            cast(array() as array<string>)
        {%- endif -%}
    {%- else -%}
        {{ dbt.spark__safe_cast(field, type) }}
    {%- endif -%}
{%- endmacro %}

{% macro sql_type(duck_type) -%}
    {#- A column type written as DuckDB names it, in this adapter's SQL. -#}
    {{ return(adapter.dispatch('sql_type', 'memc')(duck_type)) }}
{%- endmacro %}
{% macro default__sql_type(duck_type) -%}{{ duck_type }}{%- endmacro %}
{% macro spark__sql_type(duck_type) -%}
    {%- set t = duck_type | lower -%}
    {%- if t.endswith('[]') -%}array<{{ spark__sql_type(t[:-2]) }}>
    {%- else -%}{{ {'varchar': 'string', 'text': 'string', 'timestamptz': 'timestamp', 'timestamp with time zone': 'timestamp'}.get(t, t) }}
    {%- endif -%}
{%- endmacro %}

{% macro utc_date(expr) -%}
    {#- The UTC calendar date of a timestamp. -#}
    {{ return(adapter.dispatch('utc_date', 'memc')(expr)) }}
{%- endmacro %}
{% macro default__utc_date(expr) -%}cast(timezone('UTC', cast({{ expr }} as timestamptz)) as date){%- endmacro %}
{#- The spark target's session time zone is UTC (profiles.yml). -#}
{% macro spark__utc_date(expr) -%}to_date({{ expr }}){%- endmacro %}

{% macro star_except(relation, excluded) -%}
    {#- Every column of `relation` but those named, for a select list. -#}
    {{ return(adapter.dispatch('star_except', 'memc')(relation, excluded)) }}
{%- endmacro %}
{% macro default__star_except(relation, excluded) -%}* exclude ({{ excluded | join(', ') }}){%- endmacro %}
{% macro spark__star_except(relation, excluded) -%}
    {%- if execute -%}
        {%- set keep = [] -%}
        {%- for c in adapter.get_columns_in_relation(relation) if c.name | lower not in excluded -%}{%- do keep.append(c.name) -%}{%- endfor -%}
        {{ keep | join(', ') }}
    {%- else -%}*{%- endif -%}
{%- endmacro %}

{% macro list_size(expr) -%}{{ return(adapter.dispatch('list_size', 'memc')(expr)) }}{%- endmacro %}
{% macro default__list_size(expr) -%}len({{ expr }}){%- endmacro %}
{% macro spark__list_size(expr) -%}size({{ expr }}){%- endmacro %}

{% macro list_agg_where(expr, condition) -%}
    {#- Aggregate: the group's values where `condition` holds, as a list (NULL or empty when none
        does: callers coalesce). -#}
    {{ return(adapter.dispatch('list_agg_where', 'memc')(expr, condition)) }}
{%- endmacro %}
{% macro default__list_agg_where(expr, condition) -%}list({{ expr }}) filter (where {{ condition }}){%- endmacro %}
{% macro spark__list_agg_where(expr, condition) -%}collect_list(case when {{ condition }} then {{ expr }} end){%- endmacro %}

{% macro timestamp_infinity() -%}{{ return(adapter.dispatch('timestamp_infinity', 'memc')()) }}{%- endmacro %}
{% macro default__timestamp_infinity() -%}'infinity'::timestamptz{%- endmacro %}
{#- Spark has no infinite timestamp: the last second of its range's last year stands for it. -#}
{% macro spark__timestamp_infinity() -%}timestamp '9999-12-31 23:59:59'{%- endmacro %}

{#- JSON text columns (the ledger's attributes, a rejection's proposal), read by a path. -#}
{% macro json_text(expr, path) -%}{{ return(adapter.dispatch('json_text', 'memc')(expr, path)) }}{%- endmacro %}
{% macro default__json_text(expr, path) -%}json_extract_string({{ expr }}, '{{ path }}'){%- endmacro %}
{% macro spark__json_text(expr, path) -%}get_json_object({{ expr }}, '{{ path }}'){%- endmacro %}

{% macro json_has(expr, path) -%}{{ return(adapter.dispatch('json_has', 'memc')(expr, path)) }}{%- endmacro %}
{% macro default__json_has(expr, path) -%}json_exists({{ expr }}, '{{ path }}'){%- endmacro %}
{% macro spark__json_has(expr, path) -%}(get_json_object({{ expr }}, '{{ path }}') is not null){%- endmacro %}

{% macro json_text_list(expr, path) -%}
    {#- A JSON array of strings at `path` as a list of text (NULL when there is none). -#}
    {{ return(adapter.dispatch('json_text_list', 'memc')(expr, path)) }}
{%- endmacro %}
{% macro default__json_text_list(expr, path) -%}cast(json_extract_string({{ expr }}, '{{ path }}[*]') as varchar[]){%- endmacro %}
{% macro spark__json_text_list(expr, path) -%}from_json(get_json_object({{ expr }}, '{{ path }}'), 'array<string>'){%- endmacro %}

{% macro version_parts(expr) -%}
    {#- "0.10.2" as the list [0, 10, 2], so that versions compare as numbers. -#}
    {{ return(adapter.dispatch('version_parts', 'memc')(expr)) }}
{%- endmacro %}
{% macro default__version_parts(expr) -%}list_transform(string_split({{ expr }}, '.'), lambda x: try_cast(x as integer)){%- endmacro %}
{% macro spark__version_parts(expr) -%}transform(split({{ expr }}, '[.]'), x -> cast(x as int)){%- endmacro %}

{% macro try_cast_to(expr, duck_type) -%}
    {#- NULL where the value does not cast (Spark's cast, ANSI mode off, does that itself). -#}
    {{ return(adapter.dispatch('try_cast_to', 'memc')(expr, duck_type)) }}
{%- endmacro %}
{% macro default__try_cast_to(expr, duck_type) -%}try_cast({{ expr }} as {{ duck_type }}){%- endmacro %}
{% macro spark__try_cast_to(expr, duck_type) -%}cast({{ expr }} as {{ sql_type(duck_type) }}){%- endmacro %}
