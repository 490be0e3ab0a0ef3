//! envctl-sandbox: an embedded AWS control-plane emulator (ECS, MSK, RDS, CloudWatch).
