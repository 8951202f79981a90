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
