{% macro with_optional_columns(relation, columns) -%}
    {#- The relation with every column of `columns` ({name: type}) present: columns the files
        lack come out as NULL. UNION ALL BY NAME with an empty typed row set does it in plain SQL,
        so a staging model keeps working while a producer's schema grows (claims gained
        polarity, time_phrase and object_id) and over a mix of old and new files. -#}
    (
        select * from {{ relation }}
        union all by name
        select
            {%- for name, type in columns.items() %}
            null::{{ type }} as {{ name }}{{ "," if not loop.last }}
            {%- endfor %}
        where false
    )
{%- endmacro %}

{% macro file_exists(path_glob) -%}
    {#- True when at least one file matches, checked by DuckDB at run time (glob() table
        function). False while parsing, when nothing may be read. -#}
    {%- if not execute -%}
        {{ return(false) }}
    {%- endif -%}
    {%- set result = run_query("select count(*) from glob('" ~ path_glob ~ "')") -%}
    {{ return(result.columns[0].values()[0] > 0) }}
{%- endmacro %}

{% macro source_or_empty(source_name, table_name, path_glob, columns) -%}
    {#- A source that may not exist yet: read it when its file is there, else an empty row set
        with the same columns. source() is called either way, so dbt (and Dagster's lineage)
        always records the dependency. -#}
    {%- set relation = source(source_name, table_name) -%}
    {%- if file_exists(path_glob) -%}
        {{ with_optional_columns(relation, columns) }}
    {%- else -%}
        (
            select
                {%- for name, type in columns.items() %}
                null::{{ type }} as {{ name }}{{ "," if not loop.last }}
                {%- endfor %}
            where false
        )
    {%- endif -%}
{%- endmacro %}
