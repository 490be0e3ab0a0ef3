//! Adapters at the edge: the AWS SDK clients, and functions that translate between the
//! model and the SDK and do nothing else. Waiting, ordering and retry policy live in `exec`.
pub mod cloudwatch;
pub mod ecs;
pub mod engines;
pub mod error;
pub mod kafka;
pub mod logs;
pub mod paced;
pub mod rds;
pub mod s3;
pub mod secrets;

use aws_config::{BehaviorVersion, Region};

pub use error::AwsError;

/// How to reach AWS: the default credential chain (env vars, profiles, SSO, instance
/// roles), with the region, profile and endpoint overrides of the command line.
#[derive(Debug, Clone, Default)]
pub struct Connection {
    pub region: String,
    pub profile: Option<String>,
    /// An endpoint for every service (the sandbox, or a proxy); the standard
    /// AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> variables are honoured as well.
    pub endpoint_url: Option<String>,
    /// Static dummy credentials, for the sandbox only.
    pub sandbox: bool,
    /// Leave retries to envctl's own backoff. The SDK sleeps between its attempts in real
    /// time; on a simulated clock every wait must go through envctl's clock.
    pub no_sdk_retries: bool,
}

/// One client per AWS service envctl drives.
#[derive(Debug, Clone)]
pub struct Clients {
    pub ecs: aws_sdk_ecs::Client,
    pub kafka: aws_sdk_kafka::Client,
    pub rds: aws_sdk_rds::Client,
    pub cloudwatch: aws_sdk_cloudwatch::Client,
    /// The writer's master credentials (a secret envctl creates).
    pub secrets: aws_sdk_secretsmanager::Client,
    /// The log groups the task definitions' awslogs driver writes to.
    pub logs: aws_sdk_cloudwatchlogs::Client,
    /// Only the remote lock's objects (`lock: s3://...`).
    pub s3: aws_sdk_s3::Client,
}

impl Clients {
    pub async fn connect(connection: &Connection) -> Clients {
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(connection.region.clone()));
        if let Some(profile) = &connection.profile {
            loader = loader.profile_name(profile);
        }
        if let Some(url) = &connection.endpoint_url {
            loader = loader.endpoint_url(url);
        }
        if connection.sandbox {
            loader = loader.credentials_provider(aws_sdk_ecs::config::Credentials::new(
                "sandbox",
                "sandbox",
                None,
                None,
                "envctl-sandbox",
            ));
        }
        if connection.no_sdk_retries {
            loader = loader.retry_config(aws_config::retry::RetryConfig::disabled());
        }
        let config = loader.load().await;
        Clients {
            ecs: aws_sdk_ecs::Client::new(&config),
            kafka: aws_sdk_kafka::Client::new(&config),
            rds: aws_sdk_rds::Client::new(&config),
            cloudwatch: aws_sdk_cloudwatch::Client::new(&config),
            secrets: aws_sdk_secretsmanager::Client::new(&config),
            logs: aws_sdk_cloudwatchlogs::Client::new(&config),
            s3: s3_client(&config, connection),
        }
    }
}

/// Path-style addressing (`/bucket/key`) when an endpoint is given: the sandbox, moto and
/// proxies on loopback have no per-bucket host names. Checksums only where an operation
/// requires them: the lock's objects are a few hundred bytes sent once, and a loopback
/// emulator need not speak aws-chunked trailers.
fn s3_client(config: &aws_config::SdkConfig, connection: &Connection) -> aws_sdk_s3::Client {
    let mut builder = aws_sdk_s3::config::Builder::from(config)
        .request_checksum_calculation(aws_sdk_s3::config::RequestChecksumCalculation::WhenRequired);
    if connection.endpoint_url.is_some() || connection.sandbox {
        builder = builder.force_path_style(true);
    }
    aws_sdk_s3::Client::from_conf(builder.build())
}
