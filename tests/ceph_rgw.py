"""A real S3 server on loopback for the tests: a single-node Ceph (one monitor, one memstore OSD,
radosgw on 127.0.0.1, cephx off) from Debian's packages (`radosgw ceph-mon ceph-osd`, 16.2; `.ci/run`
installs them), started in a temp dir and stopped at the end with nothing left running.

Measured here (2 cores shared with other jobs, 2026-12-02, five starts): up and answering S3 in
16-31 s (most of it radosgw creating its pools), 138-140 MB resident for the three daemons. Everything it writes is under its
temp dir (the OSD keeps its objects in memory), and :meth:`CephRGW.stop` kills the daemons by pid.

``python tests/ceph_rgw.py`` starts one, prints its endpoint and keys, and stops it on Enter.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

BINARIES = ("ceph-mon", "ceph-osd", "radosgw", "radosgw-admin", "monmaptool", "ceph")
ACCESS_KEY = "memc-test-access"
SECRET_KEY = "memc-test-secret"
BUCKET = "memc-test"


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if shutil.which(b) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class CephRGW:
    """One running single-node Ceph with radosgw; ``endpoint`` is its S3 URL on 127.0.0.1."""

    root: Path
    endpoint: str = ""
    bucket: str = BUCKET
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    start_seconds: float = 0.0
    procs: list[subprocess.Popen] = field(default_factory=list)
    _readers: set[str] = field(default_factory=set)

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    def env(self) -> dict[str, str]:
        """The standard AWS variables a client (boto3, memc's S3 ledger) reads."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": "us-east-1",
            # RGW 16.2 answers 411 to the chunked uploads that carry botocore's default CRC trailers
            "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
            "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
        }

    def rss_mb(self) -> float:
        """The daemons' resident memory, from /proc (MB)."""
        total = 0
        for p in self.procs:
            try:
                for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except FileNotFoundError:
                pass
        return total / 1024

    # ------------------------------------------------------------------ start

    def start(self, timeout: float = 180) -> "CephRGW":
        missing = missing_binaries()
        if missing:
            raise RuntimeError(
                f"Ceph is not installed ({', '.join(missing)} missing): "
                "apt-get install -y radosgw ceph-mon ceph-osd ceph-mgr (.ci/run does it as root)")
        t0 = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        for d in ("run", "log", "mon", "osd0", "rgw"):
            (self.root / d).mkdir(exist_ok=True)
        mon_port, rgw_port = _free_port(), _free_port()
        self.endpoint = f"http://127.0.0.1:{rgw_port}"
        fsid = str(uuid.uuid4())
        r = self.root
        self.conf.write_text(f"""[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{mon_port}
ms bind ipv6 = false
public addr = 127.0.0.1
cluster addr = 127.0.0.1
public network = 127.0.0.0/8
cluster network = 127.0.0.0/8
ms bind ipv4 = true
auth cluster required = none
auth service required = none
auth client required = none
keyring = /dev/null
run dir = {r}/run
admin socket = {r}/run/$name.asok
log file = {r}/log/$name.log
mon data = {r}/mon
osd data = {r}/osd$id
osd objectstore = memstore
memstore device bytes = 1073741824
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
mon max pg per osd = 1000
rgw data = {r}/rgw
[client.rgw]
# radosgw's built-in defaults ask for cephx and a secure mon connection; auth is off here
auth client required = none
ms mon client mode = crc
# tcp_nodelay: without it every GET and LIST waits ~40 ms for the client's delayed ACK (Nagle's
# algorithm holds the body behind the headers): 44-48 ms a GET on loopback, 2-3 ms with it
rgw frontends = beast endpoint=127.0.0.1:{rgw_port} tcp_nodelay=1
rgw dns name = 127.0.0.1
""")
        c = ["-c", str(self.conf)]
        self._run(["monmaptool", "--create", "--addv", "a", f"[v2:127.0.0.1:{mon_port}]", "--fsid", fsid,
                   str(r / "monmap")])
        self._run(["ceph-mon", *c, "--mkfs", "-i", "a", "--monmap", str(r / "monmap")])
        self._daemon(["ceph-mon", *c, "-f", "-i", "a"], "mon")
        osd_uuid = str(uuid.uuid4())
        osd_id = self._ceph(["osd", "new", osd_uuid], timeout=60).strip()
        self._run(["ceph-osd", *c, "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid])
        self._daemon(["ceph-osd", *c, "-f", "-i", osd_id], "osd")
        self._daemon(["radosgw", *c, "-f", "-n", "client.rgw", "--no-mon-config"], "rgw")
        self._run(["radosgw-admin", *c, "user", "create", "--uid=memc", "--display-name=memc",
                   f"--access-key={self.access_key}", f"--secret-key={self.secret_key}"], timeout=120)
        deadline = time.monotonic() + timeout
        while True:
            self._alive()
            try:
                urllib.request.urlopen(self.endpoint, timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"radosgw did not answer on {self.endpoint} in {timeout:.0f} s "
                                       f"(logs: {r / 'log'})") from None
                time.sleep(0.5)
        self.client().create_bucket(Bucket=self.bucket)
        self.start_seconds = time.monotonic() - t0
        return self

    def reader(self, uid: str = "reader") -> dict[str, str]:
        """The AWS variables of a second RGW user that may only read (get and list) the bucket,
        by a bucket policy: an asking node's credentials. Made once per uid."""
        access, secret = f"{uid.upper()}ACCESSKEY00", f"{uid}-secret-key-0000000000000000"
        if uid not in self._readers:
            self._run(["radosgw-admin", "-c", str(self.conf), "user", "create", f"--uid={uid}", f"--display-name={uid}",
                       f"--access-key={access}", f"--secret-key={secret}"], timeout=120)
            self._readers.add(uid)
            policy = {"Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"AWS": [f"arn:aws:iam:::user/{u}" for u in sorted(self._readers)]},
                "Action": ["s3:GetObject", "s3:ListBucket", "s3:GetObjectVersion", "s3:ListBucketVersions"],
                "Resource": [f"arn:aws:s3:::{self.bucket}", f"arn:aws:s3:::{self.bucket}/*"]}]}
            self.client().put_bucket_policy(Bucket=self.bucket, Policy=json.dumps(policy))
        return {**self.env(), "AWS_ACCESS_KEY_ID": access, "AWS_SECRET_ACCESS_KEY": secret}

    def client(self):
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name="us-east-1",
            config=Config(request_checksum_calculation="when_required",
                          response_checksum_validation="when_required"))

    def _run(self, cmd: list[str], timeout: float = 60) -> str:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
        return p.stdout

    def _ceph(self, args: list[str], timeout: float = 60) -> str:
        return self._run(["ceph", "-c", str(self.conf), "--connect-timeout", str(int(timeout)), *args],
                         timeout=timeout + 10)

    def _daemon(self, cmd: list[str], name: str) -> None:
        out = open(self.root / "log" / f"{name}.stdout", "w")
        # its own process group, so stop() can kill a daemon and any child it forked
        self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        out.close()

    def _alive(self) -> None:
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} exited {p.returncode} (logs: {self.root / 'log'})")

    # ------------------------------------------------------------------ stop

    def stop(self) -> None:
        """SIGKILL every daemon's process group and reap it: nothing is left running (the OSD's
        objects lived in memory; the temp dir is pytest's to remove)."""
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(30)
        self.procs.clear()


# s3rver (npm) is the negative control: an S3 emulator that ignores If-None-Match, so memc's probe
# must refuse it. `.ci/run` installs it here (`npm install --prefix <dir> s3rver@3.7.1`, ~30 s).
S3RVER_DIR = Path(os.environ.get("MEMC_S3RVER_DIR") or Path.home() / ".cache" / "memc-tests" / "s3rver")


@dataclass
class S3rver:
    root: Path
    endpoint: str = ""
    bucket: str = BUCKET
    proc: subprocess.Popen | None = None

    def env(self) -> dict[str, str]:
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "S3RVER",
                "AWS_SECRET_ACCESS_KEY": "S3RVER", "AWS_DEFAULT_REGION": "us-east-1"}

    def start(self, timeout: float = 30) -> "S3rver":
        cli = S3RVER_DIR / "node_modules" / ".bin" / "s3rver"
        if not cli.exists() or shutil.which("node") is None:
            raise RuntimeError(f"s3rver is not installed at {cli}: npm install --prefix {S3RVER_DIR} s3rver@3.7.1 "
                               "(.ci/run does it)")
        port = _free_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.root / "s3rver.log", "w")
        self.proc = subprocess.Popen([str(cli), "-d", str(self.root / "data"), "-a", "127.0.0.1", "-p", str(port),
                                      "--configure-bucket", self.bucket], stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"s3rver exited {self.proc.returncode}: {(self.root / 's3rver.log').read_text()}")
            try:
                urllib.request.urlopen(self.endpoint, timeout=2).read()
                return self
            except urllib.error.HTTPError:
                return self  # it answers (403 without a signature)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"s3rver did not answer on {self.endpoint}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
            self.proc = None


def start_ceph_rgw(root: Path) -> CephRGW:
    rgw = CephRGW(root)
    try:
        return rgw.start()
    except BaseException:
        rgw.stop()
        raise


if __name__ == "__main__":
    import tempfile

    # SIGTERM (kill <pid>) stops the daemons too: a background job ignores SIGINT
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rgw = start_ceph_rgw(Path(tempfile.mkdtemp(prefix="ceph-rgw-")))
    print(f"up in {rgw.start_seconds:.1f} s, {rgw.rss_mb():.0f} MB resident")
    for k, v in rgw.env().items():
        print(f"export {k}={v}")
    try:
        input("Enter (or kill <pid>) stops it. ")
    except EOFError:
        pass
    finally:
        rgw.stop()
