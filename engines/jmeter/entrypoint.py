#!/usr/bin/env python3
"""envctl's JMeter engine: the entrypoint of one engine task of a `load:` step.

The protocol (envctl's own; envctl_aws_model::engine documents it for all three parties):

1. fetch the plan (ENVCTL_PLAN_URI) and its files (ENVCTL_FILES_URIS, one S3 URI a line)
   into the working directory;
2. wait at the start barrier: poll ENVCTL_BARRIER_URI every second until the object exists
   (envctl writes it once every engine is RUNNING), then sleep until its `start_at`; give
   up with exit code 1 after ENVCTL_BARRIER_TIMEOUT_S seconds;
3. run `jmeter -n -t plan -l result.jtl -j jmeter.log` with `-Jname=value` for every
   property of ENVCTL_PROPERTIES (a JSON object), CSV results;
4. while JMeter runs, put the JTL's new complete lines every ENVCTL_UPLOAD_PERIOD_S
   seconds (default 30) as the next part, result.jtl.part-000001, -000002, ...: what was
   measured is in S3 even if the task is stopped or killed before the end (envctl joins the
   parts when result.jtl is missing);
5. put result.jtl (whole, at a normal end), the last part, jmeter.log (JMeter's log, then
   this script's lines) and engine.json ({"exit_code", "synthetic": false, "tool":
   "jmeter", "max_cpu_percent", ...}: the highest one-minute average CPU while JMeter ran,
   in percent of the task's vCPUs, so envctl can flag a saturated generator) under
   ENVCTL_RESULTS_URI + "<engine id>/", and exit with JMeter's exit code. SIGTERM (StopTask,
   a step's timeout) stops JMeter, puts the last part, the log and engine.json, and exits
   143; the task definition gives it 120 s for that (`stopTimeout`, Fargate's maximum).

The engine id is the task id (the tail of the task ARN from the ECS task metadata
endpoint), or ENVCTL_ENGINE_ID when set (a local run).

Only the Python standard library: S3 is reached with a small SigV4 client, path-style, at
AWS_ENDPOINT_URL when set (the sandbox, a proxy) or the S3 endpoint of the bucket's Region
(ENVCTL_BUCKET_REGION, from envctl; AWS_REGION otherwise), signed for that Region. Credentials
come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN or, on ECS, from the
task role's container credentials endpoint.
"""

import datetime
import hashlib
import hmac
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

BARRIER_POLL_S = 1.0
LOG = []


def say(text):
    line = "%s envctl-engine: %s" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        text,
    )
    LOG.append(line)
    print(line, file=sys.stderr, flush=True)


class S3Error(Exception):
    def __init__(self, status, body):
        super().__init__("S3 answered %s: %s" % (status, body[:300]))
        self.status = status


class Credentials:
    """Static credentials from the environment, or the ECS container credentials."""

    def __init__(self):
        self.expires = 0.0
        self.key = self.secret = self.token = None

    def get(self):
        if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
            return (
                os.environ["AWS_ACCESS_KEY_ID"],
                os.environ["AWS_SECRET_ACCESS_KEY"],
                os.environ.get("AWS_SESSION_TOKEN"),
            )
        if time.time() < self.expires - 300 and self.key:
            return self.key, self.secret, self.token
        relative = os.environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        full = os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
        url = "http://169.254.170.2" + relative if relative else full
        if not url:
            raise SystemExit("no AWS credentials: set AWS_ACCESS_KEY_ID or run as an ECS task with a task role")
        request = urllib.request.Request(url)
        token = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
        if token:
            request.add_header("Authorization", token)
        with urllib.request.urlopen(request, timeout=10) as response:
            doc = json.load(response)
        self.key, self.secret, self.token = doc["AccessKeyId"], doc["SecretAccessKey"], doc.get("Token")
        expiration = doc.get("Expiration", "")
        try:
            self.expires = datetime.datetime.fromisoformat(expiration.replace("Z", "+00:00")).timestamp()
        except ValueError:
            self.expires = time.time() + 900
        return self.key, self.secret, self.token


class S3:
    """GET and PUT of objects, path-style, signed with AWS Signature Version 4."""

    def __init__(self):
        # The bucket's Region, which envctl passes (it may differ from the task's: S3 answers
        # a request signed for another Region with 301 PermanentRedirect).
        self.region = (
            os.environ.get("ENVCTL_BUCKET_REGION")
            or os.environ.get("AWS_REGION")
            or os.environ.get("AWS_DEFAULT_REGION")
            or "us-east-1"
        )
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        self.endpoint = (endpoint or "https://s3.%s.amazonaws.com" % self.region).rstrip("/")
        self.credentials = Credentials()

    def request(self, method, bucket, key, body=b""):
        url = urllib.parse.urlsplit(self.endpoint)
        path = "/%s/%s" % (bucket, urllib.parse.quote(key, safe="/-_.~"))
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        date = amz_date[:8]
        payload = hashlib.sha256(body).hexdigest()
        access, secret, token = self.credentials.get()
        headers = {
            "host": url.netloc,
            "x-amz-content-sha256": payload,
            "x-amz-date": amz_date,
        }
        if token:
            headers["x-amz-security-token"] = token
        names = sorted(headers)
        canonical = "\n".join(
            [
                method,
                url.path.rstrip("/") + path,
                "",
                "".join("%s:%s\n" % (n, headers[n]) for n in names),
                ";".join(names),
                payload,
            ]
        )
        scope = "%s/%s/s3/aws4_request" % (date, self.region)
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )

        def sign(k, msg):
            return hmac.new(k, msg.encode(), hashlib.sha256).digest()

        k = sign(("AWS4" + secret).encode(), date)
        k = sign(k, self.region)
        k = sign(k, "s3")
        k = sign(k, "aws4_request")
        signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
            access,
            scope,
            ";".join(names),
            signature,
        )
        request = urllib.request.Request(
            self.endpoint + path, data=body if method == "PUT" else None, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            raise S3Error(e.code, e.read().decode("utf-8", "replace")) from None

    def get(self, uri):
        bucket, key = split_uri(uri)
        return self.request("GET", bucket, key)

    def get_if_exists(self, uri):
        try:
            return self.get(uri)
        except S3Error as e:
            if e.status in (403, 404):
                return None
            raise

    def put(self, uri, body):
        bucket, key = split_uri(uri)
        self.request("PUT", bucket, key, body)


def cpu_seconds():
    """CPU time used so far: the task's cgroup (v2, then v1), else all of /proc/stat (a
    Fargate task is a VM of its own)."""
    try:
        with open("/sys/fs/cgroup/cpu.stat") as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/cpuacct/cpuacct.usage") as f:
            return int(f.read()) / 1e9
    except (OSError, ValueError):
        pass
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)
    return busy / os.sysconf("SC_CLK_TCK")


def vcpus():
    """The task's vCPUs: the cgroup's CPU quota, else the CPUs the VM has."""
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()[:2]
            if quota != "max":
                return max(int(quota) / int(period), 0.01)
    except (OSError, ValueError):
        pass
    return float(os.cpu_count() or 1)


class CpuMonitor(threading.Thread):
    """Samples CPU every 5 s; keeps the highest average over a whole minute."""

    WINDOW_S = 60.0

    def __init__(self):
        super().__init__(daemon=True)
        self.samples = []
        self.max_percent = None
        self.done = threading.Event()

    def run(self):
        cpus = vcpus()
        while not self.done.is_set():
            try:
                now, used = time.monotonic(), cpu_seconds()
            except (OSError, ValueError, IndexError):
                return
            self.samples.append((now, used))
            old = [s for s in self.samples if now - s[0] >= self.WINDOW_S]
            if old:
                t0, u0 = old[-1]
                percent = 100.0 * (used - u0) / ((now - t0) * cpus)
                self.max_percent = max(self.max_percent or 0.0, percent)
                self.samples = self.samples[len(old) - 1:]
            self.done.wait(5.0)


class PartUploader(threading.Thread):
    """Puts the JTL's new complete lines every `period` seconds as the next part object
    (result.jtl.part-NNNNNN), so a stopped or killed engine leaves what it measured."""

    def __init__(self, s3, results, jtl, period):
        super().__init__(daemon=True)
        self.s3, self.results, self.jtl, self.period = s3, results, jtl, period
        self.offset = 0
        self.parts = 0
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(self.period):
            try:
                self.flush()
            except (OSError, S3Error) as e:
                say("uploading a part of the JTL failed (retried at the next period): %s" % e)

    def flush(self):
        """Puts the complete lines written since the last part, if any, as the next part."""
        with self.lock:
            if not os.path.exists(self.jtl):
                return
            with open(self.jtl, "rb") as f:
                f.seek(self.offset)
                data = f.read()
            end = data.rfind(b"\n") + 1
            if end == 0:
                return
            self.s3.put(self.results + "result.jtl.part-%06d" % (self.parts + 1), data[:end])
            self.parts += 1
            self.offset += end


def split_uri(uri):
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise SystemExit("not an S3 URI: %r" % uri)
    bucket, key = uri[5:].split("/", 1)
    return bucket, key


def engine_id():
    if os.environ.get("ENVCTL_ENGINE_ID"):
        return os.environ["ENVCTL_ENGINE_ID"]
    metadata = os.environ.get("ECS_CONTAINER_METADATA_URI_V4")
    if metadata:
        try:
            with urllib.request.urlopen(metadata + "/task", timeout=5) as response:
                return json.load(response)["TaskARN"].rsplit("/", 1)[-1]
        except (OSError, ValueError, KeyError) as e:
            say("task metadata unreadable (%s); using the host name" % e)
    return socket.gethostname()


def wait_at_barrier(s3, uri, timeout_s):
    give_up = time.time() + timeout_s
    while True:
        body = s3.get_if_exists(uri)
        if body is not None:
            start_at = float(json.loads(body.decode())["start_at"])
            delay = start_at - time.time()
            say("barrier open: starting at %.3f (in %.3f s)" % (start_at, max(delay, 0.0)))
            if delay > 0:
                time.sleep(delay)
            return True
        if time.time() >= give_up:
            say("barrier: no %s after %.0f s; giving up" % (uri, timeout_s))
            return False
        time.sleep(BARRIER_POLL_S)


def main():
    workdir = os.environ.get("ENVCTL_WORK_DIR", "/tmp/envctl-engine")
    os.makedirs(workdir, exist_ok=True)
    s3 = S3()
    me = engine_id()
    results = os.environ["ENVCTL_RESULTS_URI"]
    if not results.endswith("/"):
        results += "/"
    results += me + "/"
    jtl = os.path.join(workdir, "result.jtl")
    log = os.path.join(workdir, "jmeter.log")
    # Only this run's results are uploaded (a reused working directory may hold others).
    for stale in (jtl, log):
        if os.path.exists(stale):
            os.remove(stale)
    state = {"process": None, "stopped": False}

    def on_term(signum, frame):
        state["stopped"] = True
        say("SIGTERM: stopping JMeter")
        if state["process"] is not None:
            state["process"].terminate()

    signal.signal(signal.SIGTERM, on_term)
    code = 1
    started = None
    monitor = CpuMonitor()
    parts = PartUploader(s3, results, jtl, float(os.environ.get("ENVCTL_UPLOAD_PERIOD_S") or "30"))
    try:
        plan_uri = os.environ["ENVCTL_PLAN_URI"]
        plan = os.path.join(workdir, plan_uri.rsplit("/", 1)[-1])
        with open(plan, "wb") as f:
            f.write(s3.get(plan_uri))
        for uri in filter(None, os.environ.get("ENVCTL_FILES_URIS", "").splitlines()):
            with open(os.path.join(workdir, uri.rsplit("/", 1)[-1]), "wb") as f:
                f.write(s3.get(uri))
        say("engine %s: fetched %s" % (me, plan_uri))
        timeout_s = float(os.environ.get("ENVCTL_BARRIER_TIMEOUT_S", "300"))
        if not wait_at_barrier(s3, os.environ["ENVCTL_BARRIER_URI"], timeout_s):
            code = 1
        elif state["stopped"]:
            code = 143
        else:
            properties = json.loads(os.environ.get("ENVCTL_PROPERTIES") or "{}")
            command = [
                os.environ.get("JMETER_BIN", "jmeter"),
                "-n",
                "-t",
                plan,
                "-l",
                jtl,
                "-j",
                log,
                "-Jjmeter.save.saveservice.output_format=csv",
            ] + ["-J%s=%s" % (k, v) for k, v in sorted(properties.items())]
            started = time.time()
            say("running %s" % " ".join(command[:4]))
            monitor.start()
            parts.start()
            state["process"] = subprocess.Popen(command, cwd=workdir)
            code = state["process"].wait()
            monitor.done.set()
            if state["stopped"]:
                code = 143
            say("JMeter exited with %d" % code)
    except (OSError, S3Error, ValueError, KeyError) as e:
        say("failed: %s" % e)
        code = 1
    finally:
        monitor.done.set()
        parts.done.set()
        upload(s3, results, jtl, log, (code, state["stopped"]), started, monitor.max_percent, parts)
    return code


def upload(s3, results, jtl, log, ending, started, max_cpu_percent, parts):
    code, stopped = ending
    try:
        # The last part first: a stopped engine has stopTimeout seconds before SIGKILL.
        parts.flush()
        if os.path.exists(jtl) and not stopped:
            with open(jtl, "rb") as f:
                s3.put(results + "result.jtl", f.read())
        text = b""
        if os.path.exists(log):
            with open(log, "rb") as f:
                text = f.read()
        s3.put(results + "jmeter.log", text + ("\n".join(LOG) + "\n").encode())
        summary = {
            "exit_code": code,
            "synthetic": False,
            "tool": "jmeter",
            "started_at": started,
            "max_cpu_percent": max_cpu_percent,
        }
        s3.put(results + "engine.json", json.dumps(summary).encode())
    except (OSError, S3Error) as e:
        print("envctl-engine: uploading the results failed: %s" % e, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
