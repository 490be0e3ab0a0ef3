//! `envctl unlock ENV --run RUN_ID`: break a lease on purpose, as `terraform force-unlock`
//! does, when the run holding it is gone (a CI runner lost mid-apply) and waiting for its
//! expiry is not an option. Only the named run's lease is removed: a typo or a run that
//! took over meanwhile is refused, naming the holder. A lease its run still renews belongs
//! to a live run: breaking it needs `--force`, which says whose run it is and asks first.
use std::process::ExitCode;

use super::common;
use crate::cli::UnlockArgs;
use crate::lock::{self, Holder, LockLocation};

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
        let result = async {
            let store = common::lock_store(&session, &location).await?;
            let described = location.describe(&env);
            // Another run's lease, or none, is refused by force_unlock below; a live lease of
            // the named run needs --force and a confirmation first.
            if let Some(lease) = store.current(&env).await?
                && lease.run_id == args.run_id
            {
                let now = lock::wall_clock_now();
                let ours = Holder::current(&args.run_id);
                lock::check_unlock(&lease, &ours.host, now, args.force, &described)?;
                if lease.is_being_renewed(&ours.host, now) {
                    eprintln!(
                        "warning: `{env}` is held by a live {}; it stops at its next renewal, \
                         and it will not tear down or switch the environment after that",
                        lease.describe_holder(now)
                    );
                    if !common::confirm(&format!("Break its lease on `{env}`?"), args.yes)? {
                        eprintln!("Cancelled: the lease is untouched.");
                        return Ok(common::exit(1));
                    }
                }
            }
            let lease = store.force_unlock(&env, &args.run_id).await?;
            common::unstamp(&session, &compiled.desired.cluster.name, &args.run_id).await;
            eprintln!(
                "unlocked `{env}`: removed the lease of run {} ({}, pid {}) at {described}",
                lease.run_id, lease.owner, lease.pid,
            );
            anyhow::Ok(ExitCode::SUCCESS)
        }
        .await;
        session.close().await?;
        result
    })
}
