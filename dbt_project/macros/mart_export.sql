{#- A mart exported as Parquet into the home's warehouse/marts (its `location`), with a view of the
    same name over the file, so that models, tests and `memc sql` query it in the warehouse while
    readers open the file without the warehouse (a reader holding memc.duckdb would keep the
    next build from taking its write lock).

    dbt-duckdb's `external` materialization does the same in ten statements (a table of the
    model, its count, the file, a view under a temporary name, two renames, two drops, each a
    round of dbt's Jinja and events): ~60 ms a mart, 0.6 s of a one-message build's dbt step for
    the 15 marts, against two statements here (docs/benchmarks.md). And it writes one all-NULL
    row into the file of an empty model, which every reader had to drop; DuckDB 2 writes an empty
    result's schema with no rows, so the file holds exactly the model's rows.

    `use_tmp_file`: DuckDB writes the file beside its target and moves it over the old one when
    the query has finished, so a model that fails (or a build killed mid-write) leaves the last
    export whole, as the table `external` wrote first did. Spark's counterpart is
    materializations_spark.sql. -#}
{% materialization mart_export, adapter='duckdb' %}
  {%- set location = render(config.require('location')) | replace("'", "''") -%}
  {%- set target_relation = this.incorporate(type='view') -%}
  {%- set existing_relation = load_cached_relation(this) -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}
  {%- if existing_relation is not none and existing_relation.type != 'view' -%}
    {{ adapter.drop_relation(existing_relation) }}
  {%- endif %}
  {% call statement('main') -%}
    copy ({{ compiled_code }}) to '{{ location }}' (format parquet, use_tmp_file true);
    create or replace view {{ target_relation }} as select * from read_parquet('{{ location }}');
  {%- endcall %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
