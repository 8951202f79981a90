{% test columns_hold(model, not_null=[], unique=[], accepted_values={}) %}
    {#- A model's column rules, checked in one dbt node and one scan of the model. Written per
        column, dbt's not_null, unique and accepted_values are a node each: 75 on this project,
        ~15 ms of dbt's Python apiece plus a Dagster check event, on every build (a one-new-message
        build spent ~1 s of its ~5 s on them). The test returns one row per broken rule: the rule,
        the column(s) and how many rows break it (for `unique`, the rows beyond the first of each
        shared value). The rules mean what dbt's do: not_null; unique
        ignores NULLs; accepted_values lets NULL pass (pair it with not_null); a list of columns in
        `unique` is a combination no two rows share (NULLs count as values, as in dbt_utils'
        unique_combination_of_columns). -#}
    {%- set counted = [] -%}
    {%- for column in not_null -%}
        {%- do counted.append(("not_null", column, "sum(case when " ~ column ~ " is null then 1 else 0 end)")) -%}
    {%- endfor -%}
    {%- for column in unique if column is string -%}
        {%- do counted.append(("unique", column, "count(" ~ column ~ ") - count(distinct " ~ column ~ ")")) -%}
    {%- endfor -%}
    {%- for column, values in accepted_values.items() -%}
        {%- set listed = [] -%}
        {%- for value in values -%}{%- do listed.append("'" ~ (value | string | replace("'", "''")) ~ "'") -%}{%- endfor -%}
        {%- do counted.append(("accepted_values", column, "sum(case when " ~ column ~ " not in (" ~ listed | join(", ") ~ ") then 1 else 0 end)")) -%}
    {%- endfor -%}
    {%- set broken = [] -%}
    {%- for rule, column, expression in counted -%}
        {%- do broken.append("select '" ~ rule ~ "' as broken_rule, '" ~ column ~ "' as column_name, failing_" ~ loop.index ~ " as failing_rows from counted where failing_" ~ loop.index ~ " > 0") -%}
    {%- endfor -%}
    {%- for columns in unique if columns is not string -%}
        {%- do broken.append("select 'unique' as broken_rule, '" ~ columns | join(", ") ~ "' as column_name, sum(surplus) as failing_rows from (select count(*) - 1 as surplus from " ~ model ~ " group by " ~ columns | join(", ") ~ " having count(*) > 1) as shared having count(*) > 0") -%}
    {%- endfor -%}
    {%- if not broken -%}
        {{ exceptions.raise_compiler_error("columns_hold on " ~ model ~ " names no rule: give not_null, unique or accepted_values") }}
    {%- endif -%}
    {%- if counted %}
    with counted as (
        select {% for rule, column, expression in counted %}{{ expression }} as failing_{{ loop.index }}{{ ", " if not loop.last }}{% endfor %}
        from {{ model }}
    )
    {%- endif %}
    {{ broken | join("\n    union all\n    ") }}
{% endtest %}

{% test names_what_it_closes(model, column_name) %}
    {#- The write policy's promise: every UPDATE and every DELETE names what it closed (the
        superseded claims, the retracted value, the erased entries), so no change of state is
        without its target. -#}
    select action_id, action, rule
    from {{ model }}
    where action in ('UPDATE', 'DELETE') and coalesce({{ list_size(column_name) }}, 0) = 0
{% endtest %}
