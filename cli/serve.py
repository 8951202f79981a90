"""`memc serve` (the HTTP API), `memc mcp` (the MCP server) and `memc keys` (API keys).

All three serve or configure one memory home. Over HTTP (the API and MCP's streamable HTTP) the
principal comes from each request's API key; the stdio MCP server's is fixed when it starts
(``--as`` or ``--key``)."""

from __future__ import annotations

import ipaddress
import os

import click

from api.auth import Caller, KeyError_, KeyStore, check_principal, check_scopes
from cli.common import dump, home_option, resolve_home


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option("--max-body-mb", default=8.0, show_default=True, type=click.FloatRange(0.001), help="Largest request body accepted (413 above).")
@click.option("--log-level", default="info", show_default=True, type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option(
    "--keep-fresh/--no-keep-fresh", default=True, show_default=True,
    help="Build the views whenever the ledger is ahead of them (after ingests, and every minute); off when a `memc up` daemon keeps this home.",
)  # fmt: skip
@click.option(
    "--workers", default=1, show_default=True, type=click.IntRange(1, 64),
    help="Processes answering requests on the one port; each loads the app and the question model (about 0.35-0.5 GB). Two on two cores answer about 1.5x the asks/s of one.",
)  # fmt: skip
@home_option
@click.pass_context
def serve(ctx, host, port, max_body_mb, log_level, keep_fresh, workers, home_dir):
    """Serve the HTTP API (FastAPI under uvicorn): ingest, ask, state, forget, health and
    watermarks, with the OpenAPI document at /openapi.json and its pages at /docs.

    Every request but /v1/health needs a key from `memc keys add`."""
    import uvicorn  # lazy: only `memc serve` needs it

    home = resolve_home(ctx, home_dir).ensure()
    if not _loopback(host):
        click.echo(f"warning: binding {host}: the API will be reachable from other machines (keys travel in clear without TLS)", err=True)
    if not any(not k.get("revoked_at") for k in KeyStore(home).list()):
        click.echo("note: no API keys yet; make one with `memc keys add --principal NAME`", err=True)
    from api import local  # lazy: stdlib only, but only `memc serve` writes the record

    # `memc ask` on this machine hands its question to this server (api/local.py): the operator's
    # token opens /v1/local/ask, and <home>/run/serve.json (0600) says where and with what.
    token = local.new_token()
    settings = dict(max_body_bytes=int(max_body_mb * 1024 * 1024), warm=True, keep_fresh=keep_fresh, local_token=token)
    if workers == 1:
        from api.app import create_app  # lazy: loads FastAPI, Dagster and dbt (cli/__init__.py)

        config = uvicorn.Config(create_app(home, **settings), host=host, port=port, log_level=log_level)
    else:
        # Each worker is a fresh process that loads the app itself (api/workers.py); this one
        # only supervises them, and never loads FastAPI, Dagster or dbt.
        from api import workers as pool

        pool.export_settings(str(home.root), **settings)
        config = uvicorn.Config(pool.APP_FACTORY, factory=True, workers=workers, host=host, port=port, log_level=log_level)
    # Bound here, before the record is written, so the record names a port this process holds
    # (and the real one when --port 0 lets the system pick).
    sock = config.bind_socket()
    # Listening before the record exists: a `memc ask` that reads it while uvicorn still starts
    # waits in the backlog instead of being refused and compiling by itself.
    sock.listen(config.backlog)
    port = sock.getsockname()[1]
    click.echo(f"memc API on http://{host}:{port} (memory home {home.root}); OpenAPI at /openapi.json; Ctrl-C stops it", err=True)
    record = local.write_record(home, host=host, port=port, token=token, version=local.package_version()) if local.connect_host(host) else None
    try:
        if workers == 1:
            uvicorn.Server(config).run(sockets=[sock])
        else:  # uvicorn's supervisor: starts the workers on this socket, replaces one that dies
            from uvicorn.supervisors import Multiprocess

            Multiprocess(config, sockets=[sock]).run()
    finally:  # one process: the app's shutdown removes it (api/app.py); this covers a failed start-up
        if record is not None:
            local.remove_record(home, token)

@click.command("mcp")
@click.option("--as", "principal", default=None, help="stdio: the principal every tool acts for (or $MEMC_PRINCIPAL).")
@click.option("--key", "key", default=None, help="stdio: an API key instead of --as: its principal, admin flag and scopes (or $MEMC_API_KEY).")
@click.option("--admin", is_flag=True, help="With --as: the principal is an administrator (may forget, crosses scopes).")
@click.option("--scope", "scopes", multiple=True, help="With --as: limit the server to these scopes (repeatable).")
@click.option("--http", "http_port", default=None, type=click.IntRange(0, 65535), help="Serve streamable HTTP on this port instead of stdio; every request then needs an API key.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: address to bind.")
@click.option("--keep-fresh/--no-keep-fresh", default=True, show_default=True, help="Build the views whenever the ledger is ahead of them, as `memc serve` does.")
@home_option
@click.pass_context
def mcp_command(ctx, principal, key, admin, scopes, http_port, host, keep_fresh, home_dir):
    """Serve the MCP server (tools remember, recall, state, forget) over stdio, or streamable
    HTTP at http://HOST:PORT/mcp with --http.

    Over stdio the principal is fixed here, by --as or by the principal of --key: the agent on
    the other end of the pipe is the user's own. Over HTTP there is no fixed principal: every
    request carries an API key (`Authorization: Bearer KEY`, from `memc keys add`) and acts for
    its principal; a request without one is answered 401. No tool argument names the asker."""
    from api.mcp_server import build_mcp_server  # lazy: loads the MCP SDK, Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir).ensure()
    if http_port is not None:
        if principal or key or admin or scopes:
            raise click.UsageError("over --http the principal comes from each request's API key: drop --as/--key/--admin/--scope")
        if not any(not k.get("revoked_at") for k in KeyStore(home).list()):
            click.echo("note: no API keys yet; make one with `memc keys add --principal NAME`", err=True)
        if not _loopback(host):
            click.echo(f"warning: binding {host}: reachable from other machines (keys travel in clear without TLS)", err=True)
        url = f"http://{host}:{http_port}"
        server = build_mcp_server(home, None, url=url, keep_fresh=keep_fresh)
        click.echo(f"memc MCP server on {url}/mcp (memory home {home.root}); each request needs an API key", err=True)
        server.run("streamable-http", host=host, port=http_port)
        return
    principal = principal or os.environ.get("MEMC_PRINCIPAL")
    key = key or os.environ.get("MEMC_API_KEY")
    if bool(principal) == bool(key):
        raise click.UsageError("say who the server acts for: --as PRINCIPAL, or --key KEY (not both)")
    if key:
        if admin or scopes:
            raise click.UsageError("--admin and --scope come from the key itself when --key is given")
        caller = KeyStore(home).authenticate(key)
        if caller is None:
            raise click.ClickException("unknown or revoked API key")
    else:
        try:
            caller = Caller(principal=check_principal(principal), admin=admin, scopes=check_scopes(scopes or None))
        except KeyError_ as exc:
            raise click.BadParameter(str(exc), param_hint="--as/--scope") from None
    build_mcp_server(home, caller, keep_fresh=keep_fresh).run("stdio")

@click.group("keys")
def keys():
    """API keys for the HTTP API: each stands for one principal (hashed at rest)."""

@keys.command("add")
@click.option("--principal", required=True, help="Who the key stands for.")
@click.option("--admin", is_flag=True, help="May forget, cross scopes and write for anyone.")
@click.option("--scope", "scopes", multiple=True, help="Limit the key to these scopes (repeatable; default: any scope).")
@click.option(
    "--write-for",
    "write_for",
    multiple=True,
    help="A principal whose private memory this key may write evidence into (repeatable), e.g. for an ingestion service.",
)
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def keys_add(ctx, principal, admin, scopes, write_for, as_json, home_dir):
    """Make a key and print it once: only its hash is kept."""

    try:
        token, record = KeyStore(resolve_home(ctx, home_dir).ensure()).add(principal, admin=admin, scopes=scopes or None, write_for=write_for)
    except KeyError_ as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump({**record, "key": token})
        return
    click.echo(token)
    role = "admin" if admin else "principal"
    where = f", scopes {', '.join(scopes)}" if scopes else ""
    where += f", may write for {', '.join(write_for)}" if write_for else ""
    click.echo(f"key {record['key_id']} for {role} {principal}{where}; shown only now, store it safely", err=True)

@keys.command("list")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def keys_list(ctx, as_json, home_dir):
    """Every key (never the key itself): id, principal, role, scopes, created and revoked times."""

    records = KeyStore(resolve_home(ctx, home_dir)).list()
    if as_json:
        dump(records)
        return
    if not records:
        click.echo("no keys (make one with `memc keys add --principal NAME`)")
    for r in records:
        status = f"revoked {r['revoked_at'][:19]}" if r.get("revoked_at") else "active"
        scopes = ",".join(r["scopes"]) if r.get("scopes") else "*"
        click.echo(f"{r['key_id']}  {r['principal']:<16} {'admin' if r['admin'] else '-':<5} scopes {scopes:<16} created {r['created_at'][:19]}  {status}")

@keys.command("revoke")
@click.argument("key_id")
@home_option
@click.pass_context
def keys_revoke(ctx, key_id, home_dir):
    """Revoke a key by its id: a running server refuses it from the next request."""

    try:
        record = KeyStore(resolve_home(ctx, home_dir)).revoke(key_id)
    except KeyError_ as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"revoked {record['key_id']} ({record['principal']}) at {record['revoked_at'][:19]}")
