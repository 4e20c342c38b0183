//! Shared by the integration tests: the key every server takes, servers on either runtime (a
//! storage node, the proxy in front of nodes, the `ferry` binary), one hand-written HTTP/1.1
//! client, an AWS SDK client, and test data.

/// Generate one `#[test]` per runtime for each listed test function `fn(RuntimeKind)`, named
/// `tokio::NAME` and `smol::NAME`.
macro_rules! on_both_runtimes {
    ($($name:ident),* $(,)?) => {
        mod tokio {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Tokio) })*
        }
        mod smol {
            $(#[test] fn $name() { super::$name(ferry_server::RuntimeKind::Smol) })*
        }
    };
}

/// Generate four `#[test]`s for each `async fn case(target: Target)` named: `case::tokio` and
/// `case::smol` run it against one node on each runtime, `case::proxy_tokio` and
/// `case::proxy_smol` through `ferry proxy` in front of [`sdk::PROXY_NODES`] nodes.
macro_rules! on_every_target {
    ($($case:ident),* $(,)?) => {$(
        on_every_target!(@case $case:
            tokio NODE_TOKIO, smol NODE_SMOL, proxy_tokio PROXY_TOKIO, proxy_smol PROXY_SMOL);
    )*};
    (@case $case:ident: $($name:ident $target:ident),+) => {
        mod $case {
            $(
                #[test]
                fn $name() {
                    $crate::support::sdk::block_on(
                        super::$case($crate::support::sdk::Target::$target),
                    );
                }
            )+
        }
    };
}

pub mod http;
pub mod node;
pub mod process;
pub mod proxy;
pub mod sdk;
pub mod store;
pub mod tmpfs;

/// The access key every test server accepts (and its clients sign with).
pub const ACCESS_KEY: &str = "AKIAFERRYTESTKEY0001";
/// Its secret.
pub const SECRET_KEY: &str = "ferry+test/secret+key/0123456789abcdefghij";
/// The region the servers sign for.
pub const REGION: &str = "us-east-1";
