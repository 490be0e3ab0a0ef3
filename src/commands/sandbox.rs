//! `envctl sandbox serve`: the embedded AWS emulator as a standalone server.
use std::process::ExitCode;

use envctl_sandbox::{FaultConfig, Sandbox, SandboxConfig};

use super::common;
use crate::cli::{SandboxArgs, SandboxCommand};

pub fn run(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let SandboxCommand::Serve(serve) = args.command;
    let mut config = SandboxConfig {
        port: serve.port,
        state_dir: serve.state_dir.clone(),
        ..SandboxConfig::default()
    };
    if let Some(scale) = serve.time_scale {
        config.time_scale = scale;
    }
    if let Some(path) = &serve.faults {
        config.faults = FaultConfig::from_file(path)?;
    }
    let rt = common::runtime()?;
    rt.block_on(async {
        let sandbox = Sandbox::start(config.clone()).await?;
        println!("envctl sandbox listening on {}", sandbox.endpoint_url());
        // AWS_DEFAULT_REGION too: the AWS CLI v1 reads only that one and refuses without it.
        println!("{}", exports(&sandbox.endpoint_url(), &config.region));
        println!(
            "  time scale {}x; control API under {}/_sandbox/; Ctrl-C stops",
            config.time_scale,
            sandbox.endpoint_url()
        );
        tokio::signal::ctrl_c().await.ok();
        sandbox.shutdown().await?;
        eprintln!(
            "sandbox stopped{}",
            if serve.state_dir.is_some() {
                "; world saved"
            } else {
                ""
            }
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// The shell line that points an AWS client at the sandbox.
fn exports(endpoint: &str, region: &str) -> String {
    format!(
        "  export AWS_ENDPOINT_URL={endpoint} AWS_ACCESS_KEY_ID=sandbox \
         AWS_SECRET_ACCESS_KEY=sandbox AWS_REGION={region} AWS_DEFAULT_REGION={region}"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_exports_name_the_region_for_both_cli_generations() {
        let line = super::exports("http://127.0.0.1:4566", "us-east-1");
        assert!(line.contains(" AWS_REGION=us-east-1"), "{line}");
        assert!(line.contains(" AWS_DEFAULT_REGION=us-east-1"), "{line}");
    }
}
