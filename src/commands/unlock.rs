//! `envctl unlock ENV --run RUN_ID`: break a lease on purpose, as `terraform force-unlock`
//! does, when the run holding it is gone (a CI runner lost mid-apply) and waiting for its
//! expiry is not an option. Only the named run's lease is removed: a typo or a run that
//! took over meanwhile is refused, naming the holder.
use std::process::ExitCode;

use super::common;
use crate::cli::UnlockArgs;
use crate::exec::lock_backend::{self, LockLocation};

pub fn run(args: UnlockArgs) -> anyhow::Result<ExitCode> {
    let Some(compiled) = common::load(&args.env, &args.overrides) else {
        return Ok(common::exit(1));
    };
    let env = compiled.desired.env.clone();
    let location = LockLocation::choose(
        args.target.lock.as_deref(),
        compiled.loaded.spec.lock.as_ref().map(|l| l.value.as_str()),
        &args.target.state_dir,
    )
    .map_err(anyhow::Error::msg)?;
    let rt = common::runtime()?;
    rt.block_on(async {
        let session = common::session(&args.target, &compiled.desired.region).await?;
        let result =
            lock_backend::force_unlock(&location, &session.clients.s3, &env, &args.run_id).await;
        let result = match result {
            Ok(lease) => {
                common::unstamp(&session, &compiled.desired.cluster.name, &args.run_id).await;
                eprintln!(
                    "unlocked `{env}`: removed the lease of run {} ({}, pid {}) at {}",
                    lease.run_id,
                    lease.owner,
                    lease.pid,
                    location.describe(&env)
                );
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => Err(e.into()),
        };
        session.close().await?;
        result
    })
}
