{#- The marts are `mart_export` models (mart_export.sql): on DuckDB a model's rows exported as
    Parquet into the home's warehouse/marts, which readers open without the warehouse file. On
    Spark a table is already Parquet files in Spark's warehouse, read by any engine: there a
    `mart_export` model is built as dbt-spark's table (its `location` is DuckDB's and is left to it). -#}
{% materialization mart_export, adapter='spark' %}
    {{ return(materialization_table_spark()) }}
{% endmaterialization %}
