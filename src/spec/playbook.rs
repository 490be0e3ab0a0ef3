//! Playbooks (`playbooks/*.yaml`): a test matrix over an environment.
//!
//! Axes hold variants; a variant changes the environment (`set:`, the same paths as
//! `--set`) and/or the workload (`vars:`). Running a playbook is `matrix`'s job; this module
//! reads it and checks it against its environment.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;

use super::decode::{At, Decode, Decoder, Duration, NamePairs, Scalar, suggest};
use super::diagnostic::Diagnostic;
use super::load::{LoadedEnv, Loader};
use super::merge::{SetOverride, apply_set};
use super::node::{Node, NodeKind};
use super::source::Span;

/// A test matrix over one environment.
#[derive(Debug, Clone, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Playbook {
    /// Name of the comparison; names the results directory.
    pub name: At<String>,
    /// What the comparison is about (shown in the report).
    pub description: Option<String>,
    /// Env file, relative to the playbook.
    pub env: At<String>,
    /// Axes in declared order; each maps variant names to `set`/`vars`.
    #[schemars(with = "BTreeMap<String, BTreeMap<String, VariantSchema>>")]
    pub matrix: Vec<Axis>,
    /// Axes whose variants advance together (by position) instead of crossing.
    #[schemars(with = "Option<Vec<Vec<String>>>")]
    pub zip: Vec<Vec<At<String>>>,
    /// Points to leave out: each entry maps axis names to variant names.
    #[schemars(with = "Option<Vec<BTreeMap<String, String>>>")]
    pub exclude: Vec<NamePairs>,
    /// Runs of each point (default 1); 2 or more give noise estimates in reports.
    #[schemars(with = "Option<u32>")]
    pub repeat: At<u32>,
    /// Shuffle the repeats' order (defends against drift over time).
    #[schemars(with = "Option<bool>")]
    pub shuffle: bool,
    /// An axis whose variants run in declared order and stop at the first failing point;
    /// the last passing variant is reported as the limit.
    #[schemars(with = "Option<String>")]
    pub ramp: Option<At<String>>,
    /// The workload, run at each point.
    pub steps: Vec<Step>,
    #[schemars(with = "Option<Collect>")]
    pub collect: Collect,
    /// always, on-success, never or keep-on-failure (default always).
    #[schemars(with = "Option<TeardownPolicy>")]
    pub teardown: At<TeardownPolicy>,
    /// Stop at the first failing point (default false: record it and go on).
    #[schemars(with = "Option<bool>")]
    pub fail_fast: bool,
    /// Wall-clock limit of the whole run, teardown included.
    #[schemars(with = "Option<Duration>")]
    pub deadline: Option<At<Duration>>,
    #[schemars(with = "Option<ReportSpec>")]
    pub report: ReportSpec,
}

#[derive(Debug, Clone)]
pub struct Axis {
    pub name: At<String>,
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone)]
pub struct Variant {
    pub name: At<String>,
    pub set: Vec<SetOverride>,
    pub vars: BTreeMap<String, At<Scalar>>,
}

/// The schema of one variant.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
#[allow(dead_code)] // only its schema is used
pub struct VariantSchema {
    /// Environment overrides: dotted paths (as --set) to values.
    set: Option<BTreeMap<String, serde_json::Value>>,
    /// Workload variables, visible to steps as ${name}.
    vars: Option<BTreeMap<String, Scalar>>,
}

#[derive(Debug, Clone, JsonSchema)]
#[schemars(untagged)]
pub enum Step {
    Run(Box<RunStep>),
    Wait(WaitStep),
    Parallel(ParallelStep),
}

/// A command, run with `sh -c` in the results directory of the point.
#[derive(Debug, Clone, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct RunStep {
    /// Step name in results (default: step-N).
    pub name: Option<String>,
    /// Shell command; ${var} expands variant vars and RESULTS_DIR, POINT, AXIS_<name>.
    pub run: At<String>,
    /// Kill the command after this long (default 1h).
    #[schemars(with = "Option<Duration>")]
    pub timeout: At<Duration>,
    /// Extra environment variables.
    pub env: Option<BTreeMap<String, Scalar>>,
    /// Where the step writes a JMeter result file, copied into the results.
    pub jtl: Option<At<String>>,
    /// The demo workload run instead of `run` against the sandbox (`--sandbox`): a small
    /// command that drives the sandbox and writes a real JTL, so playbooks run anywhere.
    pub demo: Option<At<String>>,
}

#[derive(Debug, Clone, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct WaitStep {
    /// Warm-up or cool-down time.
    pub wait: At<Duration>,
}

/// Steps started together, each timed on its own.
#[derive(Debug, Clone, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ParallelStep {
    pub parallel: Vec<Step>,
}

#[derive(Debug, Clone, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Collect {
    /// Metrics window padding before and after the steps (default 2m).
    #[schemars(with = "Option<Duration>")]
    pub padding: Duration,
    /// Metric period (default 60s).
    #[schemars(with = "Option<Duration>")]
    pub period: Duration,
    /// `all`, `none`, or a list of service names.
    #[schemars(with = "Option<serde_json::Value>")]
    pub ecs: EcsCollect,
    /// RDS writer and readers: CPU, connections (default true).
    #[schemars(with = "Option<bool>")]
    pub rds: bool,
    /// MSK broker CPU (default true).
    #[schemars(with = "Option<bool>")]
    pub kafka: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum EcsCollect {
    All,
    None,
    Services(Vec<At<String>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(rename_all = "kebab-case")]
pub enum TeardownPolicy {
    Always,
    OnSuccess,
    Never,
    KeepOnFailure,
}

impl TeardownPolicy {
    pub const NAMES: [&'static str; 4] = ["always", "on-success", "never", "keep-on-failure"];
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::Always,
            Self::OnSuccess,
            Self::Never,
            Self::KeepOnFailure,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }
}

#[derive(Debug, Clone, Default, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ReportSpec {
    pub title: Option<String>,
    /// The variant deltas are computed against, per axis: {kafka: zookeeper-m5}.
    #[schemars(with = "Option<BTreeMap<String, String>>")]
    pub baseline: NamePairs,
}

const PLAYBOOK_FIELDS: &[&str] = &[
    "name",
    "description",
    "env",
    "matrix",
    "zip",
    "exclude",
    "repeat",
    "shuffle",
    "ramp",
    "steps",
    "collect",
    "teardown",
    "fail_fast",
    "deadline",
    "report",
];

/// Variables every step sees besides the variant's `vars`.
/// `ENVCTL` is the running envctl binary (demo workloads call it); with `--sandbox`, steps
/// also get `AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`
/// and `ECS_CLUSTER` pointing at the sandbox.
pub const BUILTIN_VARS: &[&str] = &[
    "RESULTS_DIR",
    "POINT",
    "RUN_ID",
    "REPEAT",
    "ENV",
    "ENVCTL",
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "ECS_CLUSTER",
];

impl Decode for Playbook {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "a playbook", PLAYBOOK_FIELDS)?;
        let name = f.req(d, "name");
        let description = f.opt(d, "description");
        let env = f.req(d, "env");
        let matrix = match f.node("matrix") {
            Some(n) => decode_matrix(n, d),
            None => {
                d.error(
                    Diagnostic::error(
                        "missing-field",
                        f.span,
                        "a playbook is missing the required field `matrix`",
                    )
                    .with_hint("add `matrix:` with at least one axis of variants"),
                );
                None
            }
        };
        let zip = f.or(d, "zip", Vec::new());
        let exclude = f.or(d, "exclude", Vec::new());
        let repeat = f.opt(d, "repeat").unwrap_or_else(|| At::builtin(1));
        let shuffle = f.or(d, "shuffle", false);
        let ramp = f.opt(d, "ramp");
        let steps = f.req(d, "steps");
        let collect = match f.node("collect") {
            Some(n) => Collect::decode(n, d),
            None => Some(Collect::default()),
        };
        let teardown = match f.node("teardown") {
            Some(n) => d
                .choice(n, "teardown policy", &TeardownPolicy::NAMES)
                .and_then(|c| TeardownPolicy::from_name(&c.value).map(|p| At::new(p, c.span))),
            None => Some(At::builtin(TeardownPolicy::Always)),
        };
        let fail_fast = f.or(d, "fail_fast", false);
        let deadline = f.opt(d, "deadline");
        let report = f.opt(d, "report").unwrap_or_default();
        Some(Playbook {
            name: name?,
            description,
            env: env?,
            matrix: matrix?,
            zip,
            exclude,
            repeat,
            shuffle,
            ramp,
            steps: steps?,
            collect: collect?,
            teardown: teardown?,
            fail_fast,
            deadline,
            report,
        })
    }
}

fn decode_matrix(node: &Node, d: &mut Decoder) -> Option<Vec<Axis>> {
    let axes = d.named(node, "axes")?;
    if axes.is_empty() {
        d.error(
            Diagnostic::error("empty-matrix", node.span, "the matrix has no axes").with_hint(
                "add an axis, e.g. `log_level: {info: {set: {...}}, warn: {set: {...}}}`",
            ),
        );
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (axis_key, axis_node) in axes {
        let Some(variants) = d.named(axis_node, "variants") else {
            ok = false;
            continue;
        };
        if variants.is_empty() {
            d.error(Diagnostic::error(
                "empty-matrix",
                axis_key.span,
                format!("axis `{}` has no variants", axis_key.name),
            ));
            ok = false;
            continue;
        }
        let mut axis = Axis {
            name: At::new(axis_key.name.clone(), axis_key.span),
            variants: Vec::new(),
        };
        for (variant_key, variant_node) in variants {
            match decode_variant(variant_key.name.clone(), variant_key.span, variant_node, d) {
                Some(v) => axis.variants.push(v),
                None => ok = false,
            }
        }
        out.push(axis);
    }
    ok.then_some(out)
}

fn decode_variant(name: String, span: Span, node: &Node, d: &mut Decoder) -> Option<Variant> {
    let f = d.fields(node, "a variant", &["set", "vars"])?;
    let set = match f.node("set") {
        Some(n) => {
            let entries = d.named(n, "overrides")?;
            entries
                .iter()
                .map(|(k, v)| SetOverride {
                    path: k.name.clone(),
                    path_span: k.span,
                    value: v.clone(),
                })
                .collect()
        }
        None => Vec::new(),
    };
    let vars = f.or(d, "vars", BTreeMap::new());
    Some(Variant {
        name: At::new(name, span),
        set,
        vars,
    })
}

impl Decode for Step {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        if node.get("parallel").is_some() {
            let f = d.fields(node, "a parallel step", &["parallel"])?;
            let steps: Vec<Step> = f.req(d, "parallel")?;
            return Some(Step::Parallel(ParallelStep { parallel: steps }));
        }
        if node.get("wait").is_some() {
            let f = d.fields(node, "a wait step", &["wait"])?;
            return Some(Step::Wait(WaitStep {
                wait: f.req(d, "wait")?,
            }));
        }
        if node.get("run").is_none() {
            d.error(
                Diagnostic::error(
                    "invalid-step",
                    node.span,
                    "a step needs `run:`, `wait:` or `parallel:`",
                )
                .with_hint(
                    "e.g. `- run: jmeter -n -t plan.jmx`, `- wait: 5m`, `- parallel: [...]`",
                ),
            );
            return None;
        }
        let f = d.fields(
            node,
            "a run step",
            &["name", "run", "timeout", "env", "jtl", "demo"],
        )?;
        let name = f.opt(d, "name");
        let run: Option<At<String>> = f.req(d, "run");
        let timeout = f
            .opt(d, "timeout")
            .unwrap_or_else(|| At::builtin(Duration(std::time::Duration::from_secs(3600))));
        let env = f.opt(d, "env");
        let jtl = f.opt(d, "jtl");
        let demo = f.opt(d, "demo");
        Some(Step::Run(Box::new(RunStep {
            name,
            run: run?,
            timeout,
            env,
            jtl,
            demo,
        })))
    }
}

impl Default for Collect {
    fn default() -> Self {
        Collect {
            padding: Duration(std::time::Duration::from_secs(120)),
            period: Duration(std::time::Duration::from_secs(60)),
            ecs: EcsCollect::All,
            rds: true,
            kafka: true,
        }
    }
}

impl Decode for Collect {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(
            node,
            "collect",
            &["padding", "period", "ecs", "rds", "kafka"],
        )?;
        let default = Collect::default();
        let ecs = match f.node("ecs") {
            None => Some(EcsCollect::All),
            Some(n) => match &n.kind {
                NodeKind::Str(s) if s == "all" => Some(EcsCollect::All),
                NodeKind::Str(s) if s == "none" => Some(EcsCollect::None),
                NodeKind::Bool(true) => Some(EcsCollect::All),
                NodeKind::Bool(false) => Some(EcsCollect::None),
                NodeKind::Seq(_) => Vec::<At<String>>::decode(n, d).map(EcsCollect::Services),
                _ => {
                    d.type_error(n, "`all`, `none` or a list of service names");
                    None
                }
            },
        };
        let padding = f.or(d, "padding", default.padding);
        let period = match f.opt::<At<Duration>>(d, "period") {
            Some(p) => {
                check_metric_period(d, &p);
                p.value
            }
            None => default.period,
        };
        let rds = f.or(d, "rds", true);
        let kafka = f.or(d, "kafka", true);
        Some(Collect {
            padding,
            period,
            ecs: ecs?,
            rds,
            kafka,
        })
    }
}

/// CloudWatch standard-resolution metrics (every ECS, RDS and MSK metric envctl reads) take
/// a period that is a multiple of 60 seconds (GetMetricData API reference, `Period`).
fn check_metric_period(d: &mut Decoder, period: &At<Duration>) {
    let secs = period.value.secs();
    if secs == 0 || !secs.is_multiple_of(60) || period.value.0.subsec_nanos() != 0 {
        let lower = (secs / 60).max(1) * 60;
        d.error(
            Diagnostic::error(
                "invalid-value",
                period.span,
                format!("collect.period must be a multiple of 60 s, found {secs} s"),
            )
            .with_hint(format!(
                "standard-resolution metrics have a 60-second granularity: use {}s or {}s",
                lower,
                lower + 60
            )),
        );
    }
}

impl Decode for ReportSpec {
    fn decode(node: &Node, d: &mut Decoder) -> Option<Self> {
        let f = d.fields(node, "report", &["title", "baseline"])?;
        let title = f.opt(d, "title");
        let baseline = f.or(d, "baseline", NamePairs::default());
        Some(ReportSpec { title, baseline })
    }
}

/// A playbook with its environment loaded and every variant checked against it.
#[derive(Debug, Clone)]
pub struct LoadedPlaybook {
    pub playbook: Playbook,
    pub path: PathBuf,
    pub env: LoadedEnv,
}

impl LoadedPlaybook {
    pub fn env_path(playbook: &Playbook, path: &Path) -> PathBuf {
        path.parent()
            .unwrap_or(Path::new("."))
            .join(&playbook.env.value)
    }
}

impl Loader {
    /// Loads a playbook, its env, and checks every variant, reference and step.
    pub fn load_playbook(&mut self, path: &Path) -> Option<LoadedPlaybook> {
        let (_, tree) = self.parse_file(path, Span::BUILTIN)?;
        let mut decoder = Decoder::new();
        let playbook = Playbook::decode(&tree, &mut decoder);
        let failed = decoder.diagnostics.has_errors();
        self.diagnostics.extend(decoder.diagnostics);
        let playbook = playbook.filter(|_| !failed)?;
        let env_path = LoadedPlaybook::env_path(&playbook, path);
        let before = self.diagnostics.error_count();
        let env = self.load_env_at(&env_path, &[], playbook.env.span)?;
        check_playbook(self, &playbook, &env);
        if self.diagnostics.error_count() > before {
            return None;
        }
        Some(LoadedPlaybook {
            playbook,
            path: path.to_path_buf(),
            env,
        })
    }
}

fn check_playbook(loader: &mut Loader, p: &Playbook, env: &LoadedEnv) {
    let axis_names: Vec<&str> = p.matrix.iter().map(|a| a.name.value.as_str()).collect();
    let find_axis = |name: &At<String>| p.matrix.iter().find(|a| a.name.value == name.value);
    let unknown_axis = |name: &At<String>| {
        let diag = Diagnostic::error(
            "unknown-reference",
            name.span,
            format!("no axis `{}` in the matrix", name.value),
        );
        match suggest(&name.value, axis_names.iter().copied()) {
            Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
            None => diag.with_hint(format!("axes: {}", axis_names.join(", "))),
        }
    };
    let unknown_variant = |axis: &Axis, name: &At<String>| {
        let names: Vec<&str> = axis
            .variants
            .iter()
            .map(|v| v.name.value.as_str())
            .collect();
        let diag = Diagnostic::error(
            "unknown-reference",
            name.span,
            format!("axis `{}` has no variant `{}`", axis.name.value, name.value),
        );
        match suggest(&name.value, names.iter().copied()) {
            Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
            None => diag.with_hint(format!("variants: {}", names.join(", "))),
        }
    };
    let mut diags = Vec::new();
    // Every variant's overrides must make a valid environment.
    for axis in &p.matrix {
        for variant in &axis.variants {
            if variant.set.is_empty() {
                continue;
            }
            let mut tree = env.tree.clone();
            let mut ok = true;
            for set in &variant.set {
                if let Err(diag) = apply_set(&mut tree, set) {
                    diags.push(*diag);
                    ok = false;
                }
            }
            if ok {
                let mut sub = Loader::with_root(Some(env.root.clone()));
                sub.sources = std::mem::take(&mut loader.sources);
                let decoded = sub.decode_env(&env.path, tree);
                loader.sources = std::mem::take(&mut sub.sources);
                // Only problems the override introduced are reported (the base env was
                // already checked); they point at the playbook's `set:` values.
                diags.extend(sub.diagnostics.iter().cloned());
                if let Some(decoded) = decoded {
                    for lint in super::lint::lint_env(&decoded.spec).iter() {
                        if variant
                            .set
                            .iter()
                            .any(|s| s.value.span.file == lint.span.file)
                        {
                            diags
                                .push(lint.clone().with_note(variant.name.span, "in this variant"));
                        }
                    }
                }
            }
        }
    }
    for group in &p.zip {
        let mut len = None;
        for name in group {
            match find_axis(name) {
                None => diags.push(unknown_axis(name)),
                Some(axis) => match len {
                    None => len = Some(axis.variants.len()),
                    Some(n) if n != axis.variants.len() => diags.push(
                        Diagnostic::error(
                            "zip-length-mismatch",
                            name.span,
                            format!("zipped axis `{}` has {} variants, the first has {n}", name.value, axis.variants.len()),
                        )
                        .with_hint("zipped axes advance together, so they need the same number of variants"),
                    ),
                    Some(_) => {}
                },
            }
        }
    }
    for rule in &p.exclude {
        for (axis_name, variant) in &rule.0 {
            match find_axis(axis_name) {
                None => diags.push(unknown_axis(axis_name)),
                Some(axis) if !axis.variants.iter().any(|v| v.name.value == variant.value) => {
                    diags.push(unknown_variant(axis, variant))
                }
                Some(_) => {}
            }
        }
    }
    if let Some(ramp) = &p.ramp
        && find_axis(ramp).is_none()
    {
        diags.push(unknown_axis(ramp));
    }
    for (axis_name, variant) in &p.report.baseline.0 {
        match find_axis(axis_name) {
            None => diags.push(unknown_axis(axis_name)),
            Some(axis) if !axis.variants.iter().any(|v| v.name.value == variant.value) => {
                diags.push(unknown_variant(axis, variant))
            }
            Some(_) => {}
        }
    }
    if p.repeat.value == 0 {
        diags.push(Diagnostic::error(
            "invalid-value",
            p.repeat.span,
            "repeat must be at least 1",
        ));
    }
    if let EcsCollect::Services(names) = &p.collect.ecs {
        for name in names {
            if !env.spec.services.contains_key(&name.value) {
                let diag = Diagnostic::error(
                    "unknown-reference",
                    name.span,
                    format!(
                        "collect.ecs names `{}`, which is not a service of {}",
                        name.value, env.spec.env.value
                    ),
                );
                diags.push(
                    match suggest(&name.value, env.spec.services.keys().map(String::as_str)) {
                        Some(best) => diag.with_hint(format!("did you mean `{best}`?")),
                        None => diag,
                    },
                );
            }
        }
    }
    check_step_vars(p, &p.steps, &mut diags);
    for d in diags {
        loader.diagnostics.push(d);
    }
}

/// `${name}` in a step must be a variable every point defines, or a built-in one.
fn check_step_vars(p: &Playbook, steps: &[Step], diags: &mut Vec<Diagnostic>) {
    for step in steps {
        match step {
            Step::Parallel(par) => check_step_vars(p, &par.parallel, diags),
            Step::Wait(_) => {}
            Step::Run(run) => {
                let mut sources = vec![&run.run];
                sources.extend(run.demo.as_ref());
                for source in sources {
                    check_vars_of(p, &source.value, source.span, diags);
                }
            }
        }
    }
}

fn check_vars_of(p: &Playbook, command: &str, span: Span, diags: &mut Vec<Diagnostic>) {
    for var in referenced_vars(command) {
        if BUILTIN_VARS.contains(&var.as_str()) || var.starts_with("AXIS_") {
            continue;
        }
        let defining: Vec<&Axis> = p
            .matrix
            .iter()
            .filter(|a| a.variants.iter().any(|v| v.vars.contains_key(&var)))
            .collect();
        if defining.is_empty() {
            diags.push(
                Diagnostic::error(
                    "unknown-variable",
                    span,
                    format!("`${{{var}}}` is not defined by any variant nor built in"),
                )
                .with_hint(format!(
                    "define it in a variant's `vars:`; built-ins: {}, AXIS_<axis>",
                    BUILTIN_VARS.join(", ")
                )),
            );
            continue;
        }
        // Defined at every point if one axis defines it in all its variants.
        if defining
            .iter()
            .any(|a| a.variants.iter().all(|v| v.vars.contains_key(&var)))
        {
            continue;
        }
        let missing: Vec<String> = defining
            .iter()
            .flat_map(|a| {
                a.variants
                    .iter()
                    .filter(|v| !v.vars.contains_key(&var))
                    .map(move |v| format!("{}={}", a.name.value, v.name.value))
            })
            .collect();
        diags.push(Diagnostic::error(
            "unknown-variable",
            span,
            format!("`${{{var}}}` is not defined by {}", missing.join(", ")),
        ));
    }
}

/// Names in `${name}` (and `$name`) references of a command.
pub fn referenced_vars(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = command.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'$'
            && bytes.get(i + 1) == Some(&b'{')
            && let Some(end) = command[i + 2..].find('}')
        {
            out.push(command[i + 2..i + 2 + end].to_string());
            i += end + 3;
            continue;
        }
        i += 1;
    }
    out.sort();
    out.dedup();
    out
}
