{% macro with_optional_columns(relation, columns) -%}
    {#- The relation with every column of `columns` ({name: DuckDB type}) present: columns the
        files lack come out as NULL, so a staging model keeps working while a producer's schema
        grows (claims gained polarity, time_phrase and object_id) and over a mix of old and new
        files. -#}
    {{ return(adapter.dispatch('with_optional_columns', 'memc')(relation, columns)) }}
{%- endmacro %}

{% macro default__with_optional_columns(relation, columns) -%}
    {#- UNION ALL BY NAME with an empty typed row set: plain SQL, and DuckDB unifies the files'
        schemas as it reads them. -#}
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

{% macro spark__with_optional_columns(relation, columns) -%}
    {#- Spark has no UNION BY NAME with missing columns: the columns the relation lacks (its
        table merges the files' schemas) are added as typed NULLs. -#}
    {%- set have = [] -%}
    {%- if execute -%}
        {%- for c in adapter.get_columns_in_relation(relation) -%}{%- do have.append(c.name | lower) -%}{%- endfor -%}
    {%- endif -%}
    (
        select *
            {%- for name, type in columns.items() if name not in have %}, cast(null as {{ sql_type(type) }}) as {{ name }}{% endfor %}
        from {{ relation }}
    )
{%- endmacro %}

{% macro file_exists(path_glob) -%}
    {#- True when at least one file matches, checked by DuckDB at run time (glob() table
        function). False while parsing, when nothing may be read. -#}
    {{ return(adapter.dispatch('file_exists', 'memc')(path_glob)) }}
{%- endmacro %}

{% macro spark__file_exists(path_glob) -%}
    {#- Spark reads the home's files through the tables macros/sources_on_spark.sql registers,
        each with its columns declared, so a dataset with no file yet reads as empty. -#}
    {{ return(true) }}
{%- endmacro %}

{% macro default__file_exists(path_glob) -%}
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
    {{ return(adapter.dispatch('source_or_empty', 'memc')(source_name, table_name, path_glob, columns)) }}
{%- endmacro %}

{% macro spark__source_or_empty(source_name, table_name, path_glob, columns) -%}
    {#- On Spark the source is a table registered with its columns (macros/sources_on_spark.sql):
        empty while the file is missing. -#}
    {{ with_optional_columns(source(source_name, table_name), columns) }}
{%- endmacro %}

{% macro default__source_or_empty(source_name, table_name, path_glob, columns) -%}
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
