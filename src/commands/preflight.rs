//! `envctl preflight ENV`: read-only checks against the account before anything is created
//! (versions and classes offered, limits, subnets, role and secret ARNs).
use std::process::ExitCode;

use super::common;
use crate::cli::PreflightArgs;
use crate::compile::compile_env;
use crate::lock::LockLocation;
use crate::spec::Loader;

pub fn run(args: PreflightArgs) -> anyhow::Result<ExitCode> {
    let mut loader = Loader::with_root(args.overrides.project.root.clone())
        .with_copy(args.overrides.copy.clone());
    let compiled = compile_env(&mut loader, &args.env, &args.overrides.set);
    let diagnostics = std::mem::take(&mut loader.diagnostics).sorted();
    common::report_diagnostics(&diagnostics, &loader.sources, &args.env);
    let Some(compiled) = compiled else {
        return Ok(common::exit(1));
    };
    let location = LockLocation::choose(
        args.target.lock.as_deref(),
        compiled.loaded.spec.lock.as_ref().map(|l| l.value.as_str()),
        &args.target.state_dir,
    )
    .map_err(anyhow::Error::msg)?;
    let rt = common::runtime()?;
    let (offer, lock) = rt.block_on(async {
        let session = common::session(&args.target, &compiled.desired.region).await?;
        let offer = crate::account::offer::read_offer(&session.clients, &compiled.desired).await;
        // The lock every apply, destroy and matrix run takes first: a bucket that does not
        // exist fails them all, after the job has started.
        let store = common::lock_store(&session, &location).await?;
        let lock = store.current(&compiled.desired.env).await.map(|_| ());
        session.close().await?;
        anyhow::Ok((offer?, lock))
    })?;
    let mut findings = crate::preflight::check(&compiled.loaded.spec, &compiled.desired, &offer);
    findings.extend(crate::spec::lint::kafka_support_warnings(
        &compiled.loaded.spec,
        &super::common::today(),
    ));
    let findings = findings.sorted();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings.records(&loader.sources))?
        );
    } else if !findings.is_empty() {
        eprint!("{}", findings.render(&loader.sources));
    }
    // Last, after the env's own findings: it stops every apply, destroy and matrix run.
    if let Err(e) = &lock {
        eprintln!("error[lock]: {e}");
    }
    let errors = findings.error_count() + usize::from(lock.is_err());
    println!(
        "preflight {}: {} error(s), {} warning(s)",
        args.env.display(),
        errors,
        findings.warning_count()
    );
    Ok(common::exit(u8::from(errors > 0)))
}

/// The preflight `plan` and `apply` run before any mutating call when the plan creates a
/// data store: prints each finding with its env line; `false` when any is an error.
pub async fn gate_before_creating(
    session: &crate::session::Session,
    compiled: &crate::compile::Compiled,
    sources: &crate::spec::source::Sources,
    plan: &crate::plan::Plan,
) -> anyhow::Result<bool> {
    let findings = crate::account::offer::before_creating(
        &session.clients,
        &compiled.loaded.spec,
        &compiled.desired,
        plan,
    )
    .await?;
    if findings.is_empty() {
        return Ok(true);
    }
    eprint!("{}", findings.render(sources));
    let errors = findings.error_count();
    if errors > 0 {
        eprintln!(
            "preflight: {errors} error(s) for the data stores this plan creates; nothing was changed"
        );
    }
    Ok(errors == 0)
}
