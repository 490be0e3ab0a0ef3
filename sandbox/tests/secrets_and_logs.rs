//! Secrets Manager and CloudWatch Logs as envctl uses them: the writer's master secret and
//! the awslogs groups (docs/aws-behaviour.md, "Master credentials" and "The awslogs group
//! must exist, or be created by ECS").

mod common;

use aws_sdk_secretsmanager::error::ProvideErrorMetadata;
use aws_sdk_secretsmanager::types::Tag;

fn envctl_tag() -> Tag {
    Tag::builder().key("envctl:env").value("pcp1").build()
}

#[tokio::test]
async fn secrets_manager_keeps_a_master_secret_and_deletes_it_now_only_when_forced() {
    let (sandbox, sdk) = common::manual().await;
    let sm = aws_sdk_secretsmanager::Client::new(&sdk);
    let password = sm
        .get_random_password()
        .password_length(32)
        .exclude_characters("/'\"@ ")
        .send()
        .await
        .expect("random password")
        .random_password()
        .expect("a password")
        .to_string();
    assert_eq!(password.len(), 32);
    assert!(
        !password.chars().any(|c| "/'\"@ ".contains(c)),
        "{password}"
    );

    let document = format!(r#"{{"username":"folio_admin","password":"{password}"}}"#);
    let created = sm
        .create_secret()
        .name("envctl-pcp1-db-master")
        .secret_string(&document)
        .tags(envctl_tag())
        .send()
        .await
        .expect("create");
    let arn = created.arn().expect("arn").to_string();
    // ARNs end in '-' and six characters after the name.
    let suffix = arn
        .strip_prefix("arn:aws:secretsmanager:us-east-1:")
        .and_then(|r| r.split_once(":secret:envctl-pcp1-db-master-"))
        .map(|(_, s)| s.to_string())
        .unwrap_or_default();
    assert_eq!(suffix.len(), 6, "{arn}");

    let again = sm
        .create_secret()
        .name("envctl-pcp1-db-master")
        .secret_string("{}")
        .send()
        .await
        .expect_err("same name");
    assert_eq!(again.code(), Some("ResourceExistsException"));

    let described = sm
        .describe_secret()
        .secret_id("envctl-pcp1-db-master")
        .send()
        .await
        .expect("describe by name");
    assert_eq!(described.arn(), Some(arn.as_str()));
    assert_eq!(described.tags().len(), 1);
    let value = sm
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .expect("value by ARN");
    assert_eq!(value.secret_string(), Some(document.as_str()));

    // gc lists envctl's secrets by tag key.
    sm.create_secret()
        .name("someone-elses")
        .secret_string("{}")
        .send()
        .await
        .expect("an untagged secret");
    let listed = sm
        .list_secrets()
        .filters(
            aws_sdk_secretsmanager::types::Filter::builder()
                .key(aws_sdk_secretsmanager::types::FilterNameStringType::TagKey)
                .values("envctl:")
                .build(),
        )
        .send()
        .await
        .expect("list");
    let names: Vec<&str> = listed
        .secret_list()
        .iter()
        .filter_map(|s| s.name())
        .collect();
    assert_eq!(names, vec!["envctl-pcp1-db-master"]);

    // A plain DeleteSecret schedules the deletion: the name stays taken.
    sm.delete_secret()
        .secret_id(&arn)
        .send()
        .await
        .expect("scheduled deletion");
    let err = sm
        .get_secret_value()
        .secret_id(&arn)
        .send()
        .await
        .expect_err("marked for deletion");
    assert_eq!(err.code(), Some("InvalidRequestException"));
    let err = sm
        .create_secret()
        .name("envctl-pcp1-db-master")
        .secret_string("{}")
        .send()
        .await
        .expect_err("name scheduled for deletion");
    assert_eq!(err.code(), Some("InvalidRequestException"));
    let err = sm
        .delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .recovery_window_in_days(7)
        .send()
        .await
        .expect_err("both");
    assert_eq!(err.code(), Some("InvalidParameterException"));
    sm.delete_secret()
        .secret_id(&arn)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("forced");
    // The forced deletion completes in the background: for a short while the name is
    // still held, as terraform-provider-aws's CreateSecret retry expects.
    let err = sm
        .create_secret()
        .name("envctl-pcp1-db-master")
        .secret_string("{}")
        .send()
        .await
        .expect_err("the name is held until the background deletion ends");
    assert_eq!(err.code(), Some("InvalidRequestException"));
    sandbox.clock().advance(common::secs(20));
    let err = sm
        .describe_secret()
        .secret_id(&arn)
        .send()
        .await
        .expect_err("gone");
    assert_eq!(err.code(), Some("ResourceNotFoundException"));
    sm.create_secret()
        .name("envctl-pcp1-db-master")
        .secret_string("{}")
        .send()
        .await
        .expect("the name is free again");
    drop(sandbox);
}

#[tokio::test]
async fn log_groups_are_created_tagged_described_and_deleted() {
    let (_sandbox, sdk) = common::manual().await;
    let logs = aws_sdk_cloudwatchlogs::Client::new(&sdk);
    logs.create_log_group()
        .log_group_name("/ecs/pcp1")
        .tags("envctl:env", "pcp1")
        .send()
        .await
        .expect("create");
    let err = logs
        .create_log_group()
        .log_group_name("/ecs/pcp1")
        .send()
        .await
        .expect_err("exists");
    assert_eq!(
        aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata::code(&err),
        Some("ResourceAlreadyExistsException")
    );
    let groups = logs
        .describe_log_groups()
        .log_group_name_prefix("/ecs/pcp")
        .send()
        .await
        .expect("describe");
    let g = &groups.log_groups()[0];
    assert_eq!(g.log_group_name(), Some("/ecs/pcp1"));
    let arn = g.log_group_arn().expect("logGroupArn").to_string();
    assert_eq!(g.arn(), Some(format!("{arn}:*").as_str()));
    let tags = logs
        .list_tags_for_resource()
        .resource_arn(&arn)
        .send()
        .await
        .expect("tags");
    assert_eq!(
        tags.tags()
            .and_then(|t| t.get("envctl:env"))
            .map(String::as_str),
        Some("pcp1")
    );
    logs.delete_log_group()
        .log_group_name("/ecs/pcp1")
        .send()
        .await
        .expect("delete");
    let err = logs
        .delete_log_group()
        .log_group_name("/ecs/pcp1")
        .send()
        .await
        .expect_err("gone");
    assert_eq!(
        aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata::code(&err),
        Some("ResourceNotFoundException")
    );
    assert!(
        logs.describe_log_groups()
            .log_group_name_prefix("/ecs/pcp1")
            .send()
            .await
            .expect("describe")
            .log_groups()
            .is_empty()
    );
}

/// PutRetentionPolicy takes only the values CloudWatch Logs lists, on a group that exists,
/// and DescribeLogGroups returns it (docs/aws-behaviour.md, "Log groups get a retention").
#[tokio::test]
async fn a_retention_is_one_cloudwatch_logs_accepts() {
    let (_sandbox, sdk) = common::manual().await;
    let logs = aws_sdk_cloudwatchlogs::Client::new(&sdk);
    let code = |e: &aws_sdk_cloudwatchlogs::error::SdkError<_, _>| {
        aws_sdk_cloudwatchlogs::error::ProvideErrorMetadata::code(e).map(str::to_string)
    };
    let err = logs
        .put_retention_policy()
        .log_group_name("/envctl/pcp1/load")
        .retention_in_days(30)
        .send()
        .await
        .expect_err("no such group");
    assert_eq!(code(&err).as_deref(), Some("ResourceNotFoundException"));
    logs.create_log_group()
        .log_group_name("/envctl/pcp1/load")
        .send()
        .await
        .expect("create");
    let err = logs
        .put_retention_policy()
        .log_group_name("/envctl/pcp1/load")
        .retention_in_days(45)
        .send()
        .await
        .expect_err("45 is not a retention");
    assert_eq!(code(&err).as_deref(), Some("InvalidParameterException"));
    logs.put_retention_policy()
        .log_group_name("/envctl/pcp1/load")
        .retention_in_days(30)
        .send()
        .await
        .expect("30 days");
    let groups = logs.describe_log_groups().send().await.expect("describe");
    assert_eq!(groups.log_groups()[0].retention_in_days(), Some(30));
}
