//! EC2 instance sizes and families: the one table envctl's catalogue and the sandbox both
//! size instances from, so `validate` and the sandbox agree on what fits.

/// Memory of an ECS container instance that tasks cannot reserve: the OS and the ECS agent
/// keep about this much (docs/lints.md; `ECS_RESERVED_MEMORY` sets it on an instance).
pub const OS_AND_AGENT_MEMORY_MIB: u32 = 512;

/// EC2 instance sizes and their vCPUs.
pub const EC2_SIZES: &[(&str, u32)] = &[
    ("large", 2),
    ("xlarge", 4),
    ("2xlarge", 8),
    ("4xlarge", 16),
    ("8xlarge", 32),
    ("12xlarge", 48),
    ("16xlarge", 64),
    ("24xlarge", 96),
];

/// Network interfaces an instance of each size can have attached, the primary one included
/// (EC2 User Guide, instance types' network specifications: the same for every family
/// above at these sizes; e.g. m5.large 3, m6i.2xlarge 4, c6i.4xlarge 8, m5.16xlarge 15).
pub const EC2_NETWORK_INTERFACES: &[(&str, u32)] = &[
    ("medium", 3),
    ("large", 3),
    ("xlarge", 4),
    ("2xlarge", 4),
    ("4xlarge", 8),
    ("8xlarge", 8),
    ("12xlarge", 8),
    ("16xlarge", 15),
    ("24xlarge", 15),
];

/// How many `awsvpc` tasks an instance of this type can hold: each such task gets its own
/// network interface and the primary one is the instance's (ECS Developer Guide, "Elastic
/// network interface trunking": a c5.large takes three, so two tasks). Without ENI trunking,
/// which raises it on EC2 container instances whose account opted in; `None` for a type
/// not in the table.
pub fn awsvpc_task_slots(instance_type: &str) -> Option<u32> {
    let (_, size) = instance_type.split_once('.')?;
    let (_, interfaces) = EC2_NETWORK_INTERFACES.iter().find(|(s, _)| *s == size)?;
    Some(interfaces - 1)
}

/// EC2 families and their GiB of memory per vCPU (AWS's published ratios: general purpose
/// 4, compute 2, memory optimised 8).
pub const EC2_FAMILIES: &[(&str, u32)] = &[
    ("m5", 4),
    ("m5a", 4),
    ("m6i", 4),
    ("m6a", 4),
    ("m6g", 4),
    ("m7i", 4),
    ("m7g", 4),
    ("c5", 2),
    ("c6i", 2),
    ("c6g", 2),
    ("c7g", 2),
    ("r5", 8),
    ("r6i", 8),
    ("r6g", 8),
    ("r7g", 8),
];
