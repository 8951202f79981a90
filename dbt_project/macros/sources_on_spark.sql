{#- The home's Parquet datasets as the sources of a build on Spark. DuckDB reads them in place
    through each source's `external_location` (dbt-duckdb); dbt-spark has no such thing, so a
    build on Spark first registers them in its catalog as unmanaged tables over the same files
    (the on-run-start hook of dbt_project.yml; nothing is copied, and dropping such a table
    leaves its files alone): memc.ledger over the ledger's batch files, memc.claims over every
    extractor version's claims.parquet with the file each row came from (`filename`, as
    DuckDB's read_parquet(filename = true) gives it), memc.entity_aliases over entity
    resolution's file, empty while there is none. The claims asset's rejections.parquet files
    (memc.claim_rejections) and the list of its claims files (memc.claims_file_list, the days
    each version compiled) are registered the same way, for the two models that read them by
    path (`claims_files`, `claims_day_files` below). Registered again on every run, so each run
    lists the files the home holds then. -#}

{% macro register_sources() -%}
    {{ return(adapter.dispatch('register_sources', 'memc')()) }}
{%- endmacro %}

{% macro default__register_sources() -%}{%- endmacro %}

{% macro spark__register_sources() -%}
    {%- if execute -%}
        {%- set home = env_var('MEMC_HOME') -%}
        {%- set ledger = env_var('MEMC_LEDGER_PARQUET', home ~ '/ledger/*.parquet') -%}
        {%- for path in (home, ledger) if "'" in path or "\\" in path -%}
            {{ exceptions.raise_compiler_error("MEMC_HOME / MEMC_LEDGER_PARQUET: a path with a quote or a backslash cannot be named in Spark SQL: " ~ path) }}
        {%- endfor -%}
        {%- set statements = [
            "create database if not exists memc",
            "drop table if exists memc.ledger",
            "create table memc.ledger using parquet options (path '" ~ ledger ~ "', mergeSchema 'true')",
            "drop view if exists memc.claims",
            "drop table if exists memc.claims_files",
            "create table memc.claims_files using parquet options (path '" ~ home ~ "/claims', recursiveFileLookup 'true', pathGlobFilter 'claims.parquet', mergeSchema 'true')",
            "create view memc.claims as select *, input_file_name() as filename from memc.claims_files",
            "drop view if exists memc.claim_rejections",
            "drop table if exists memc.claim_rejection_files",
            "create table memc.claim_rejection_files (proposal_id string, extractor string, extractor_version string, source_entry_id string, source_seq bigint, validator string, reason string, proposal string, scope string, source_ref string) using parquet options (path '" ~ home ~ "/claims', recursiveFileLookup 'true', pathGlobFilter 'rejections.parquet')",
            "create view memc.claim_rejections as select *, input_file_name() as filename from memc.claim_rejection_files",
            "drop table if exists memc.claims_file_list",
            "create table memc.claims_file_list using binaryFile options (path '" ~ home ~ "/claims', recursiveFileLookup 'true', pathGlobFilter 'claims.parquet')",
            "drop table if exists memc.entity_aliases",
            "create table memc.entity_aliases (scope string, alias string, normalized string, entity_id string, canonical_name string, rule string, evidence array<string>) using parquet options (path '" ~ home ~ "/claims', recursiveFileLookup 'true', pathGlobFilter 'aliases.parquet')",
        ] -%}
        {%- for s in statements -%}
            {%- do run_query(s) -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}

{% macro claims_files(file_name, path_glob) -%}
    {#- The rows of the claims asset's `file_name` files (rejections.parquet) under `path_glob`,
        one extractor version's, as a relation. -#}
    {{ return(adapter.dispatch('claims_files', 'memc')(file_name, path_glob)) }}
{%- endmacro %}
{% macro default__claims_files(file_name, path_glob) -%}
    read_parquet('{{ path_glob }}', union_by_name = true, hive_partitioning = false)
{%- endmacro %}
{% macro spark__claims_files(file_name, path_glob) -%}
    {%- if file_name != 'rejections.parquet' -%}
        {{ exceptions.raise_compiler_error("claims_files on Spark reads rejections.parquet only, not " ~ file_name) }}
    {%- endif -%}
    (select * from memc.claim_rejections where filename like '%/extractor={{ var("extractor_key") }}/%')
{%- endmacro %}

{% macro claims_day_files(path_glob) -%}
    {#- The claims files of the day layout (claims/extractor=K/day=D/claims.parquet) as a
        relation with one column, `file`. -#}
    {{ return(adapter.dispatch('claims_day_files', 'memc')(path_glob)) }}
{%- endmacro %}
{% macro default__claims_day_files(path_glob) -%}glob('{{ path_glob }}'){%- endmacro %}
{% macro spark__claims_day_files(path_glob) -%}
    (select path as file from memc.claims_file_list where path rlike '/extractor=[^/]+/day=[^/]+/claims[.]parquet$')
{%- endmacro %}
