"""Issue 19's "a Dagster run over an S3 home with the Celery executor and a real Redis materializes
every asset", run by hand (too slow for the suite: ~4 min): a single-node Ceph RGW on loopback
(tests/ceph_rgw.py) holds the ledger (MEMC_STORAGE), a redis-server on a free port is the broker,
one Celery worker (solo pool) runs the steps; three launched runs (`dagster asset materialize`:
the ledger and entity_aliases, the claims of the ledger's day, every other asset) materialize
every asset of the definitions. Prints the timings, the step processes and any asset never
materialized or check failed.

    python benchmarks/celery_s3_run.py /tmp/celery-s3    # a fresh work folder
"""
import os, subprocess, sys, time, signal
from pathlib import Path
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests")); sys.path.insert(0, str(REPO))
from ceph_rgw import start_ceph_rgw
from memc.processes import free_port
T = Path(sys.argv[1]); subprocess.run(["rm", "-rf", str(T)]); T.mkdir(parents=True)
t0 = time.monotonic()
rgw = start_ceph_rgw(T / "ceph")
print(f"ceph up in {time.monotonic()-t0:.0f} s", flush=True)
procs = []
try:
    port = free_port()
    procs.append(subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(T), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, start_new_session=True))
    home = T / "home"; home.mkdir()
    broker, backend = f"redis://127.0.0.1:{port}/0", f"redis://127.0.0.1:{port}/1"
    (home / "memc.toml").write_text(f'[execution]\nexecutor = "celery"\nbroker = "{broker}"\nbackend = "{backend}"\n')
    env = {**os.environ, **rgw.env(), "MEMC_STORAGE": f"s3://{rgw.bucket}/celery-home", "MEMC_HOME": str(home),
           "DAGSTER_HOME": str(home / "dagster"), "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}
    bin_ = Path(sys.executable).parent
    def run(cmd, **kw):
        t = time.monotonic(); r = subprocess.run(cmd, env=env, cwd=str(REPO), capture_output=True, text=True, **kw)
        print(f"{' '.join(cmd[:6])} ... rc={r.returncode} {time.monotonic()-t:.0f} s", flush=True)
        if r.returncode: print(r.stdout[-3000:], r.stderr[-3000:])
        return r
    run([sys.executable, "-m", "cli.main", "--home", str(home), "ingest", str(REPO / "samples" / "corpus" / "team"), "--scope", "team", "--visibility", "public"])
    os.environ.update(env)
    from memc.home import MemcHome
    from orchestration.runner import prepare_environment
    h = MemcHome.resolve(home); prepare_environment(h)
    (T / "celery.yaml").write_text(f"execution:\n  config:\n    broker: {broker}\n    backend: {backend}\n")
    log = open(T / "worker.log", "wb")
    w = subprocess.Popen([str(bin_ / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y", str(T / "celery.yaml"), "-n", "w1", "--", "--pool=solo"], env=env, cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(w)
    while b" ready." not in (T / "worker.log").read_bytes(): time.sleep(0.5)
    import dagster as dg
    from catalog.partitions import register_ledger_days
    from claims.ledger_days import ledger_days
    from ledger import open_ledger
    from orchestration.definitions import build_definitions
    days = ledger_days(open_ledger(h.ledger)); print("ledger", open_ledger(h.ledger).head(), "days", days, type(open_ledger(h.ledger)).__name__)
    with dg.DagsterInstance.get() as inst:
        register_ledger_days(inst, days)
    g = build_definitions(str(home)).resolve_asset_graph()
    unpart = sorted(k.to_user_string() for k in g.materializable_asset_keys if g.get(k).partitions_def is None and k.to_user_string() not in ("entity_aliases",))
    mat = [str(bin_ / "dagster"), "asset", "materialize", "-m", "orchestration.definitions"]
    t = time.monotonic()
    run(mat + ["--select", "ledger,entity_aliases"])
    run(mat + ["--select", "claims", "--partition", days[-1]])
    run(mat + ["--select", ",".join(unpart)])
    print(f"three launched runs: {time.monotonic()-t:.0f} s", flush=True)
    with dg.DagsterInstance.get() as inst:
        missing = [k.to_user_string() for k in g.materializable_asset_keys if not inst.fetch_materializations(dg.AssetRecordsFilter(asset_key=k), limit=1).records]
        runs = inst.get_runs(limit=3)
        pids = set(); steps = 0
        for r in runs:
            for e in inst.all_logs(r.run_id):
                ev = e.dagster_event
                if ev and ev.event_type_value == "STEP_START": pids.add(ev.pid); steps += 1
                if ev and ev.event_type_value == "ASSET_CHECK_EVALUATION" and not ev.event_specific_data.passed: print("check failed", ev.event_specific_data.check_name)
        print("runs", [r.status.value for r in runs], "steps", steps, "step pids", pids, "worker group", w.pid)
        print("materializable", len(list(g.materializable_asset_keys)), "never materialized:", missing)
    print("ledger head after", open_ledger(h.ledger).head())
finally:
    for p in procs:
        try: os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError: pass
    for p in procs:
        try: p.wait(30)
        except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL)
    rgw.stop()
