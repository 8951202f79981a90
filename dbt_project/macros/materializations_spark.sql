{#- The marts are dbt-duckdb `external` models: a table exported as Parquet into the home's
    warehouse/marts, which readers open without the warehouse file. On Spark a table is already
    Parquet files in Spark's warehouse, read by any engine: there an `external` model is built
    as dbt-spark's table (its `location` and `format` are dbt-duckdb's settings and are left to it). -#}
{% materialization external, adapter='spark' %}
    {{ return(materialization_table_spark()) }}
{% endmaterialization %}
