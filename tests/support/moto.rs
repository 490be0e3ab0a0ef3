//! Starting moto (`python3 -m moto.server`, moto 5.x from PyPI) on a free loopback port for
//! cross-checks, and stopping it when the test ends, even when it fails. Shared by the root
//! crate's and the sandbox's tests (`#[path]`-included).
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto_available() -> bool {
    Command::new("python3")
        .args(["-c", "import moto.server"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `None` when moto is missing and `ENVCTL_SKIP_MOTO=1`; a panic with the fix when it is
/// missing otherwise (CI installs it).
pub fn require_moto() -> Option<()> {
    if moto_available() {
        return Some(());
    }
    if std::env::var("ENVCTL_SKIP_MOTO").is_ok_and(|v| v == "1") {
        eprintln!("moto not installed; skipped because ENVCTL_SKIP_MOTO=1");
        return None;
    }
    panic!(
        "moto is not importable by python3. Install it with `pip install 'moto[server]'` (5.x), or set ENVCTL_SKIP_MOTO=1 to skip this cross-check."
    );
}

pub async fn start_moto() -> Moto {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("python3")
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn moto");
    let moto = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "moto did not start within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    moto
}
