"""The extraction pass: typed claims from ledger evidence, gated by deterministic validators.

An extractor proposes; the validators decide. Claims are keyed by extractor name and version,
so a better extractor writes beside an older one instead of over it.
"""
