{% test unique_combination(model, columns) %}
    {#- dbt_utils.unique_combination_of_columns, written here: the hub is unreachable offline. -#}
    select {{ columns | join(', ') }}, count(*) as n
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{% endtest %}

{% test names_what_it_closes(model, column_name) %}
    {#- The write policy's promise: every UPDATE and every DELETE names what it closed (the
        superseded claims, the retracted value, the erased entries), so no change of state is
        without its target. -#}
    select action_id, action, rule
    from {{ model }}
    where action in ('UPDATE', 'DELETE') and coalesce({{ list_size(column_name) }}, 0) = 0
{% endtest %}
