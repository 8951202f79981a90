{{ config(materialized='view') }}
-- What held at valid time var('as_of'), as known at transaction time var('known_at'), for
-- var('principal') (each defaults to: now, now, the administrator). A view: with the defaults
-- it answers "what holds now" at query time. For another instant, call the macro in your own
-- SQL, or build this view with --vars (docs/analysts.md).
{%- set as_of = var('as_of', none) -%}
{%- set known_at = var('known_at', none) -%}
{%- set principal = var('principal', none) %}
{{ state_as_of(
    timestamp_literal(as_of) if as_of else "now()",
    timestamp_literal(known_at) if known_at else "now()",
    "'" ~ principal ~ "'" if principal else none
) }}
