//! `envctl import --cluster NAME [--msk NAME]... [--rds ID]... --out envs/NAME.yaml`: reads
//! what exists (only Describe/List/Get calls) and writes an env file and its templates.
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

use super::common;
use crate::account::import::{ImportRequest, read};
use crate::cli::ImportArgs;
use crate::import::{ImportOptions, import};

pub fn run(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let env = match &args.env {
        Some(e) => e.clone(),
        None => args
            .out
            .file_stem()
            .and_then(|s| s.to_str())
            .map(str::to_string)
            .context("--out has no file name to take the env's name from; pass --env")?,
    };
    let capacity = args.capacity.as_deref().map(parse_capacity).transpose()?;
    let region = args
        .target
        .region
        .clone()
        .or_else(|| std::env::var("AWS_REGION").ok())
        .or_else(|| std::env::var("AWS_DEFAULT_REGION").ok())
        // The sandbox is one Region; its default is the one it starts in.
        .or_else(|| {
            args.target
                .sandbox
                .then(|| envctl_sandbox::SandboxConfig::default().region)
        })
        .context("no Region: pass --region (or set AWS_REGION)")?;
    let out_dir = match args.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let template_dir = args
        .task_defs
        .clone()
        .unwrap_or_else(|| out_dir.join("..").join("task-defs"));
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    std::fs::create_dir_all(&template_dir)
        .with_context(|| format!("creating {}", template_dir.display()))?;
    let template_ref = relative(&out_dir, &template_dir)?;

    let request = ImportRequest {
        region: region.clone(),
        cluster: args.cluster.clone(),
        msk: args.msk.clone(),
        rds: args.rds.clone(),
    };
    let options = ImportOptions {
        env,
        owner: args.owner.clone(),
        capacity,
        template_dir: template_ref,
    };
    let rt = common::runtime()?;
    let started = std::time::Instant::now();
    let world = rt.block_on(async {
        let session = common::session(&args.target, &region).await?;
        let world = read(&session.reads(), &request).await;
        session.close().await?;
        anyhow::Ok(world?)
    })?;
    let imported = import(&world, &options);

    let mut targets = vec![(args.out.clone(), imported.env_yaml.clone())];
    for (name, text) in &imported.templates {
        targets.push((template_dir.join(name), text.clone()));
    }
    if !args.force
        && let Some((path, _)) = targets.iter().find(|(p, _)| p.exists())
    {
        bail!("{} exists; pass --force to overwrite it", path.display());
    }
    for (path, text) in &targets {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "Imported {} services ({} template{}), {} MSK cluster{}, {} DB instance{} in {:.1} s:",
        world.services.len(),
        imported.templates.len(),
        if imported.templates.len() == 1 {
            ""
        } else {
            "s"
        },
        world.kafka.len(),
        if world.kafka.len() == 1 { "" } else { "s" },
        world.db.as_ref().map_or(0, |d| 1 + d.readers.len()),
        if world.db.as_ref().is_some_and(|d| d.readers.is_empty()) {
            ""
        } else {
            "s"
        },
        started.elapsed().as_secs_f64()
    );
    for (path, _) in &targets {
        println!("  wrote {}", path.display());
    }
    if !imported.notes.is_empty() {
        println!("Not expressed (also listed at the top of the file):");
        for note in &imported.notes {
            println!("  - {note}");
        }
    }
    // The written file must load like any other: report its problems now, not at plan.
    if common::load(&args.out, &crate::cli::Overrides::default()).is_none() {
        eprintln!("The written file does not validate; fix it before `envctl plan`.");
        return Ok(common::exit(1));
    }
    println!(
        "Next: `envctl plan {} --adopt` shows what envctl would change (nothing, when the import is exact).",
        args.out.display()
    );
    if args.strict && !imported.notes.is_empty() {
        eprintln!(
            "--strict: {} thing(s) read are not expressed in the env (listed above)",
            imported.notes.len()
        );
        return Ok(common::exit(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_capacity(text: &str) -> anyhow::Result<(String, u32)> {
    let (kind, count) = text
        .split_once(':')
        .context("--capacity takes TYPE:COUNT, e.g. m6i.2xlarge:10")?;
    let count: u32 = count
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .with_context(|| format!("--capacity: `{count}` is not a positive count"))?;
    if kind.is_empty() {
        bail!("--capacity: the instance type is empty");
    }
    Ok((kind.to_string(), count))
}

/// The path of `to` as seen from `from` (both directories that exist), with `/`.
fn relative(from: &Path, to: &Path) -> anyhow::Result<String> {
    let from = from
        .canonicalize()
        .with_context(|| from.display().to_string())?;
    let to = to
        .canonicalize()
        .with_context(|| to.display().to_string())?;
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = vec!["..".into(); a.len() - common];
    parts.extend(
        b[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    Ok(if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    })
}
