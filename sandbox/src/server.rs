//! The router: decode the protocol, apply latency, faults and throttling, run the service
//! handler against the world, record the outcome. Also the `/_sandbox/` control API.

use crate::clock::Clock;
use crate::config::{DurationProfile, SandboxConfig};
use crate::faults::{ErrorKind, FaultConfig, FaultState};
use crate::protocol::{self, ApiError, cbor, json, query, rest};
use crate::state::{self, Ctx, World};
use crate::stats::{Outcome, Recorder, RequestRecord, RequestStats};
use crate::throttle::Buckets;
use crate::util::lock;
use crate::{SandboxError, cloudwatch, ecs, kafka, logs, rds, s3, secretsmanager};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, Response, StatusCode};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Request bodies above this are refused (the largest real input, a task definition, is
/// far smaller).
const BODY_LIMIT: usize = 16 * 1024 * 1024;

const ECS_TARGET_PREFIX: &str = "AmazonEC2ContainerServiceV20141113.";
const SECRETS_TARGET_PREFIX: &str = "secretsmanager.";
const LOGS_TARGET_PREFIX: &str = "Logs_20140328.";
const CLOUDWATCH_PREFIX: &str = "/service/GraniteServiceVersion20100801/operation/";

pub struct Shared {
    pub clock: Clock,
    pub(crate) region: String,
    pub(crate) account: String,
    profile: DurationProfile,
    latency: Duration,
    ecs_throttling: bool,
    state_dir: Option<PathBuf>,
    pub(crate) world: Mutex<World>,
    recorder: Mutex<Recorder>,
    faults: Mutex<FaultState>,
    fault_config: Mutex<Arc<FaultConfig>>,
    buckets: Mutex<Buckets>,
    /// S3 objects (the remote lock's leases), kept apart from the saved world.
    s3: Mutex<s3::Store>,
    request_ids: AtomicU64,
}

impl Shared {
    pub fn new(config: SandboxConfig, clock: Clock, world: World) -> Shared {
        Shared {
            clock,
            region: config.region,
            account: config.account_id,
            profile: config.profile,
            latency: config.latency,
            ecs_throttling: config.ecs_throttling,
            state_dir: config.state_dir,
            world: Mutex::new(world),
            recorder: Mutex::new(Recorder::default()),
            faults: Mutex::new(FaultState::new(config.faults.clone())),
            fault_config: Mutex::new(Arc::new(config.faults)),
            buckets: Mutex::new(Buckets::default()),
            s3: Mutex::new(s3::Store::default()),
            request_ids: AtomicU64::new(0),
        }
    }

    pub fn stats(&self) -> RequestStats {
        lock(&self.recorder).stats.clone()
    }

    pub fn log(&self) -> Vec<RequestRecord> {
        lock(&self.recorder).log.iter().cloned().collect()
    }

    pub fn reset_stats(&self) {
        lock(&self.recorder).reset();
    }

    pub fn set_faults(&self, faults: FaultConfig) {
        *lock(&self.faults) = FaultState::new(faults.clone());
        *lock(&self.fault_config) = Arc::new(faults);
    }

    pub fn persist(&self) -> Result<(), SandboxError> {
        match &self.state_dir {
            Some(dir) => {
                let world = lock(&self.world);
                state::save(dir, self.clock.now(), &world)
            }
            None => Ok(()),
        }
    }

    fn record(&self, service: &str, operation: &str, resource: Option<String>, outcome: Outcome) {
        let r = RequestRecord {
            at: self.clock.now(),
            service: service.to_string(),
            operation: operation.to_string(),
            resource,
            outcome,
        };
        lock(&self.recorder).record(r);
    }

    fn next_request_id(&self) -> String {
        let n = self.request_ids.fetch_add(1, Ordering::Relaxed) + 1;
        format!("00000000-0000-4000-8000-{n:012}")
    }
}

pub fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(dispatch).with_state(shared)
}

/// A decoded request: which service and operation, the resource it names (for the log),
/// and the protocol-specific input.
pub struct Call {
    pub service: &'static str,
    pub operation: String,
    pub resource: Option<String>,
    pub input: Input,
}

pub enum Input {
    Ecs(serde_json::Value),
    SecretsManager(serde_json::Value),
    Logs(serde_json::Value),
    Rds(query::Params),
    Kafka(kafka::Route),
    CloudWatch(ciborium::Value),
    S3(s3::Request),
}

/// What a service handler produced.
enum Output {
    Json(Vec<u8>),
    Xml(String),
    Rest(u16, serde_json::Value),
    Cbor(ciborium::Value),
    /// A complete response (S3 answers in headers as much as in bodies).
    Raw(Response<Body>),
}

async fn dispatch(State(shared): State<Arc<Shared>>, req: Request) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, BODY_LIMIT).await {
        Ok(b) => b,
        Err(_) => {
            return protocol::response(
                StatusCode::PAYLOAD_TOO_LARGE,
                &[],
                "request body too large",
            );
        }
    };
    let path = parts.uri.path().to_string();
    if let Some(rest) = path.strip_prefix("/_sandbox/") {
        return control(&shared, &parts.method, rest, parts.uri.query(), &body);
    }
    let call = match decode(&parts.method, &parts.uri, &parts.headers, &body) {
        Ok(call) => call,
        Err((service, err)) => {
            shared.record(
                service,
                "Unknown",
                None,
                Outcome::Error {
                    code: err.code.clone(),
                },
            );
            return render_error(service, &err, &shared.next_request_id());
        }
    };
    handle(&shared, call).await
}

fn decode(
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Call, (&'static str, ApiError)> {
    let path = uri.path();
    if s3::is_s3(headers) {
        let request = s3::decode(method, path, headers, body).map_err(|e| ("s3", e))?;
        return Ok(Call {
            service: "s3",
            operation: request.operation.to_string(),
            resource: Some(request.resource()),
            input: Input::S3(request),
        });
    }
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        if let Some(op) = target.strip_prefix(SECRETS_TARGET_PREFIX) {
            let input = json::parse(body).map_err(|e| ("secretsmanager", e))?;
            return Ok(Call {
                service: "secretsmanager",
                operation: op.to_string(),
                resource: secretsmanager::resource_of(&input),
                input: Input::SecretsManager(input),
            });
        }
        if let Some(op) = target.strip_prefix(LOGS_TARGET_PREFIX) {
            let input = json::parse(body).map_err(|e| ("logs", e))?;
            return Ok(Call {
                service: "logs",
                operation: op.to_string(),
                resource: logs::resource_of(&input),
                input: Input::Logs(input),
            });
        }
        let Some(op) = target.strip_prefix(ECS_TARGET_PREFIX) else {
            return Err((
                "ecs",
                ApiError::bad(
                    "UnknownOperationException",
                    format!("unknown target {target}"),
                ),
            ));
        };
        let input = json::parse(body).map_err(|e| ("ecs", e))?;
        let resource = ecs::resource_of(&input);
        return Ok(Call {
            service: "ecs",
            operation: op.to_string(),
            resource,
            input: Input::Ecs(input),
        });
    }
    if let Some(op) = path.strip_prefix(CLOUDWATCH_PREFIX) {
        let input = cbor::parse(body).map_err(|e| ("cloudwatch", e))?;
        return Ok(Call {
            service: "cloudwatch",
            operation: op.to_string(),
            resource: None,
            input: Input::CloudWatch(input),
        });
    }
    if path.starts_with("/api/v2/") || path.starts_with("/v1/") {
        let route = kafka::route(method, path, uri.query(), body).map_err(|e| ("kafka", e))?;
        return Ok(Call {
            service: "kafka",
            operation: route.operation.to_string(),
            resource: route.resource(),
            input: Input::Kafka(route),
        });
    }
    let params = query::Params::parse(body);
    if let Some(action) = params.get("Action") {
        let action = action.to_string();
        let resource = rds::resource_of(&params);
        return Ok(Call {
            service: "rds",
            operation: action,
            resource,
            input: Input::Rds(params),
        });
    }
    Err((
        "unknown",
        ApiError::new(
            404,
            "UnknownOperationException",
            format!("no AWS operation at {method} {path}"),
        ),
    ))
}

async fn handle(shared: &Shared, call: Call) -> Response<Body> {
    let faults = lock(&shared.fault_config).clone();
    let service = call.service;
    let operation = call.operation.clone();
    let resource = call.resource.clone();

    let extra = Duration::from_millis(faults.latency_for(service, &operation));
    let delay = shared.latency + extra;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }

    let request_id = shared.next_request_id();
    if let Some(kind) = lock(&shared.faults).draw_error(service, &operation) {
        shared.record(
            service,
            &operation,
            resource,
            Outcome::Fault {
                fault: kind.as_str().to_string(),
            },
        );
        return injected(service, kind, &request_id);
    }

    let now = shared.clock.now();
    if service == "ecs" && shared.ecs_throttling && !lock(&shared.buckets).take(&operation, now) {
        shared.record(service, &operation, resource, Outcome::Throttled);
        return render_error(service, &throttling_error(service), &request_id);
    }

    let ctx = Ctx {
        now,
        region: &shared.region,
        account: &shared.account,
        profile: &shared.profile,
        faults: &faults,
    };
    let mutating = envctl_aws_model::is_mutating(service, &operation);
    let result = {
        let mut world = lock(&shared.world);
        world.settle(&ctx);
        {
            // Emulated load engines read their barrier from S3 and put their results there.
            let mut s3 = lock(&shared.s3);
            for (bucket, key, body) in world.ecs.settle_engines(&ctx, &*s3) {
                s3.put(&bucket, &key, body, now);
            }
        }
        let result = match call.input {
            Input::Ecs(input) => {
                ecs::handle(&mut world, &ctx, &operation, &input).map(Output::Json)
            }
            Input::SecretsManager(input) => {
                secretsmanager::handle(&mut world, &ctx, &operation, &input).map(Output::Json)
            }
            Input::Logs(input) => {
                logs::handle(&mut world, &ctx, &operation, &input).map(Output::Json)
            }
            Input::Rds(params) => {
                rds::handle(&mut world, &ctx, &operation, &params).map(Output::Xml)
            }
            Input::Kafka(route) => {
                kafka::handle(&mut world, &ctx, &route).map(|(s, v)| Output::Rest(s, v))
            }
            Input::CloudWatch(input) => {
                cloudwatch::handle(&mut world, &ctx, &operation, &input).map(Output::Cbor)
            }
            Input::S3(request) => s3::handle(&mut lock(&shared.s3), request, now).map(Output::Raw),
        };
        if mutating
            && result.is_ok()
            && let Some(dir) = &shared.state_dir
        {
            // Persisting is best effort per call; a failure is reported by `shutdown`.
            let _ = state::save(dir, now, &world);
        }
        result
    };
    let lost = match &result {
        Ok(_) => lock(&shared.faults).lose_response(service, &operation),
        Err(_) => None,
    };
    if let Some(kind) = lost {
        // The call took effect (and was persisted); only its answer is lost.
        shared.record(
            service,
            &operation,
            resource,
            Outcome::Fault {
                fault: format!("lost_response_{}", kind.as_str()),
            },
        );
        return injected(service, kind, &request_id);
    }
    match result {
        Ok(output) => {
            shared.record(service, &operation, resource, Outcome::Ok);
            match output {
                Output::Json(v) => json::ok(v),
                Output::Xml(x) => query::ok(&operation, &x, &request_id),
                Output::Rest(status, v) => rest::ok(status, &v),
                Output::Cbor(v) => cbor::ok(&v),
                Output::Raw(response) => response,
            }
        }
        Err(err) => {
            shared.record(
                service,
                &operation,
                resource,
                Outcome::Error {
                    code: err.code.clone(),
                },
            );
            render_error(service, &err, &request_id)
        }
    }
}

fn render_error(service: &str, err: &ApiError, request_id: &str) -> Response<Body> {
    match service {
        "ecs" | "secretsmanager" | "logs" => json::error(err),
        "rds" => query::error(err, request_id),
        "kafka" => rest::error(err),
        "cloudwatch" => cbor::error(err),
        "s3" => s3::error(err, request_id),
        _ => protocol::response(err.status_code(), &[], err.message.clone()),
    }
}

/// Each service's throttling error: codes in aws-runtime's `THROTTLING_ERRORS`, so the
/// standard retry strategy backs off and retries them.
fn throttling_error(service: &str) -> ApiError {
    match service {
        "ecs" | "logs" | "secretsmanager" => ApiError::bad("ThrottlingException", "Rate exceeded"),
        "kafka" => ApiError::new(429, "TooManyRequestsException", "Too Many Requests"),
        "s3" => ApiError::new(503, "SlowDown", "Please reduce your request rate."),
        // RDS and CloudWatch (awsQuery heritage) say "Throttling".
        _ => ApiError::bad("Throttling", "Rate exceeded"),
    }
}

/// Each service's internal error (HTTP 500, transient for the SDK).
fn server_error(service: &str) -> ApiError {
    let code = match service {
        "ecs" => "ServerException",
        "secretsmanager" => "InternalServiceError",
        "logs" => "ServiceUnavailableException",
        "kafka" => "InternalServerErrorException",
        "cloudwatch" => "InternalServiceError",
        "s3" => "InternalError",
        _ => "InternalFailure",
    };
    ApiError::new(
        500,
        code,
        "We encountered an internal error. Please try again.",
    )
}

fn injected(service: &str, kind: ErrorKind, request_id: &str) -> Response<Body> {
    match kind {
        ErrorKind::Throttling => render_error(service, &throttling_error(service), request_id),
        ErrorKind::ServerError => render_error(service, &server_error(service), request_id),
        ErrorKind::ConnectionReset => protocol::response(
            StatusCode::OK,
            &[("content-length", "1024".to_string())],
            Body::new(ResetBody),
        ),
    }
}

/// A body that fails on first read: hyper has sent the head, then aborts the connection,
/// which the client sees as a dropped connection mid-response (a transient error).
struct ResetBody;

impl http_body::Body for ResetBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, std::io::Error>>> {
        std::task::Poll::Ready(Some(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "injected connection reset",
        ))))
    }
}

/// `/_sandbox/...`: GET stats, GET log, GET clock, POST faults, POST clock/advance,
/// GET/POST catalogue (what the account offers), POST logs/groups (a log group exists),
/// POST logs/create-group-permission (execution roles may create log groups),
/// POST rds/minor-upgrade (an automatic minor version upgrade), POST kafka/auto-upgrade
/// (MSK moves a cluster past its version's end of support), POST reset
/// (`?world=true` also empties the world).
fn control(
    shared: &Shared,
    method: &Method,
    path: &str,
    query: Option<&str>,
    body: &Bytes,
) -> Response<Body> {
    let json_ok = |v: serde_json::Value| rest::ok(200, &v);
    let bad = |msg: String| {
        protocol::response(
            StatusCode::BAD_REQUEST,
            &[("content-type", "application/json".to_string())],
            serde_json::json!({ "message": msg }).to_string(),
        )
    };
    match (method.as_str(), path.trim_end_matches('/')) {
        ("GET", "stats") => json_ok(serde_json::to_value(shared.stats()).unwrap_or_default()),
        ("GET", "log") => json_ok(serde_json::to_value(shared.log()).unwrap_or_default()),
        ("GET", "clock") => json_ok(serde_json::json!({
            "now": shared.clock.now(),
            "manual": shared.clock.is_manual(),
            "time_scale": shared.clock.time_scale(),
        })),
        ("GET", "faults") => {
            json_ok(serde_json::to_value(&*lock(&shared.fault_config).clone()).unwrap_or_default())
        }
        ("POST", "faults") => match serde_json::from_slice::<FaultConfig>(body) {
            Ok(f) => {
                shared.set_faults(f);
                json_ok(serde_json::json!({}))
            }
            Err(e) => bad(format!("invalid fault configuration: {e}")),
        },
        ("POST", "clock/advance") => {
            let seconds = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("seconds").and_then(serde_json::Value::as_f64));
            match seconds.and_then(|s| Duration::try_from_secs_f64(s).ok()) {
                Some(d) => {
                    shared.clock.advance(d);
                    json_ok(serde_json::json!({ "now": shared.clock.now() }))
                }
                _ => bad("expected {\"seconds\": <non-negative number>}".to_string()),
            }
        }
        ("GET", "catalogue") => {
            json_ok(serde_json::to_value(&lock(&shared.world).catalogue).unwrap_or_default())
        }
        ("POST", "catalogue") => match serde_json::from_slice::<crate::Catalogue>(body) {
            Ok(c) => {
                lock(&shared.world).catalogue = c;
                json_ok(serde_json::json!({}))
            }
            Err(e) => bad(format!("invalid catalogue: {e}")),
        },
        ("POST", "logs/groups") => {
            let name = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string));
            match name {
                Some(n) if !n.is_empty() => {
                    lock(&shared.world).ecs.create_log_group(&n);
                    json_ok(serde_json::json!({}))
                }
                _ => bad("expected {\"name\": \"<log group>\"}".to_string()),
            }
        }
        ("POST", "logs/create-group-permission") => {
            let allowed = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("allowed").and_then(serde_json::Value::as_bool));
            match allowed {
                Some(a) => {
                    lock(&shared.world)
                        .ecs
                        .set_execution_role_creates_log_groups(a);
                    json_ok(serde_json::json!({}))
                }
                None => bad("expected {\"allowed\": true|false}".to_string()),
            }
        }
        ("POST", "ecs/container-instances") => {
            match serde_json::from_slice::<crate::ecs::DeclaredInstances>(body) {
                Ok(d) => {
                    let ctx_arn =
                        |r: &str| format!("arn:aws:ecs:{}:{}:{r}", shared.region, shared.account);
                    let ids = lock(&shared.world).ecs.declare_instances(&d, ctx_arn);
                    json_ok(serde_json::json!({ "containerInstanceArns": ids }))
                }
                Err(e) => bad(format!(
                    "expected {{\"cluster\": NAME, \"instances\": [{{\"zone\", \"cpu\", \"memory\"}}]}}: {e}"
                )),
            }
        }
        ("POST", "ecs/container-instances/retire") => {
            let cluster = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| {
                    v.get("cluster")
                        .and_then(|n| n.as_str())
                        .map(str::to_string)
                });
            let Some(cluster) = cluster else {
                return bad("expected {\"cluster\": NAME}".to_string());
            };
            let retired = lock(&shared.world).ecs.retire_instances(&cluster);
            json_ok(serde_json::json!({ "retired": retired }))
        }
        ("POST", "rds/minor-upgrade") => {
            let id = serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v.get("id").and_then(|n| n.as_str()).map(str::to_lowercase));
            let Some(id) = id else {
                return bad("expected {\"id\": \"<DB instance identifier>\"}".to_string());
            };
            let mut world = lock(&shared.world);
            let World { rds, catalogue, .. } = &mut *world;
            match rds.auto_minor_upgrade(catalogue, &id) {
                Some(v) => json_ok(serde_json::json!({ "engineVersion": v })),
                None => bad(format!(
                    "no instance {id}, or no newer minor of its major in the catalogue"
                )),
            }
        }
        ("POST", "kafka/auto-upgrade") => {
            let v = serde_json::from_slice::<serde_json::Value>(body).unwrap_or_default();
            let field = |k: &str| v.get(k).and_then(|n| n.as_str()).map(str::to_string);
            let (Some(name), Some(version)) = (field("name"), field("version")) else {
                return bad(
                    "expected {\"name\": \"<cluster name>\", \"version\": \"<Kafka version>\"}"
                        .to_string(),
                );
            };
            let duration = v.get("duration_s").and_then(serde_json::Value::as_f64);
            let now = shared.clock.now();
            let mut world = lock(&shared.world);
            let World {
                kafka, catalogue, ..
            } = &mut *world;
            match kafka.auto_upgrade(catalogue, (&name, &version), now, duration) {
                Some(from) => json_ok(serde_json::json!({ "from": from, "to": version })),
                None => bad(format!(
                    "no ACTIVE cluster {name}, or {version} is not an offered version of its metadata mode"
                )),
            }
        }
        ("POST", "reset") => {
            shared.reset_stats();
            let q = rest::query(query);
            if q.get("world").is_some_and(|v| v == "true") {
                *lock(&shared.world) = World::default();
                *lock(&shared.buckets) = Buckets::default();
            }
            json_ok(serde_json::json!({}))
        }
        _ => protocol::response(
            StatusCode::NOT_FOUND,
            &[],
            format!("no control endpoint {method} /_sandbox/{path}"),
        ),
    }
}
