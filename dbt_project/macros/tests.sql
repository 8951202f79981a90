{% test unique_combination(model, columns) %}
    {#- dbt_utils.unique_combination_of_columns, written here: the hub is unreachable offline. -#}
    select {{ columns | join(', ') }}, count(*) as n
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{% endtest %}
