//! The CLI's one error type and its exit codes: 0 ok, 1 error, 2 usage, 4 not logged in,
//! 5 partial failure (a batch with failed rows).

use serde_json::{json, Value};

/// Process exit codes.
pub mod exit {
    pub const OK: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_LOGGED_IN: u8 = 4;
    pub const PARTIAL: u8 = 5;
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or input given on the command line.
    #[error("{0}")]
    Usage(String),
    /// No key (flag, environment or `svc auth login`), or the server refused it (401).
    #[error("{0}")]
    NotLoggedIn(String),
    /// The server answered with an error body.
    #[error("{code}: {message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        request_id: Option<String>,
        details: Option<Value>,
    },
    /// The server could not be reached or answered something that is not the API.
    #[error("{0}")]
    Transport(String),
    /// A local failure (files, terminal).
    #[error("{0}")]
    Local(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => exit::USAGE,
            CliError::NotLoggedIn(_) => exit::NOT_LOGGED_IN,
            CliError::Api { status: 401, .. } => exit::NOT_LOGGED_IN,
            CliError::Api { .. } | CliError::Transport(_) | CliError::Local(_) => exit::ERROR,
        }
    }

    /// The machine form printed with `--json`.
    pub fn to_json(&self) -> Value {
        match self {
            CliError::Api {
                status,
                code,
                message,
                request_id,
                details,
            } => {
                let mut e = json!({"code": code, "message": message, "status": status});
                if let Some(id) = request_id {
                    e["request_id"] = json!(id);
                }
                if let Some(d) = details {
                    e["details"] = d.clone();
                }
                json!({ "error": e })
            }
            other => {
                let code = match other {
                    CliError::Usage(_) => "usage",
                    CliError::NotLoggedIn(_) => "not_logged_in",
                    CliError::Transport(_) => "unreachable",
                    _ => "local_error",
                };
                json!({"error": {"code": code, "message": other.to_string()}})
            }
        }
    }

    /// A next step for people, when there is an obvious one.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            CliError::NotLoggedIn(_) | CliError::Api { status: 401, .. } => {
                Some("log in with `svc auth login --key <AGENT_KEY>` (or set SVC_API_KEY)")
            }
            CliError::Transport(_) => {
                Some("is svcd running? Set the address with --server or SVC_BASE_URL; `svc doctor` checks the set-up")
            }
            CliError::Api { code, .. } if code == "grant_denied" || code == "mode_denied" => {
                Some("`svc capabilities list` shows what this key may call and in which modes")
            }
            _ => None,
        }
    }
}

pub type Result<T, E = CliError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(CliError::Usage("x".into()).exit_code(), 2);
        assert_eq!(CliError::NotLoggedIn("x".into()).exit_code(), 4);
        let api = |status| CliError::Api {
            status,
            code: "c".into(),
            message: "m".into(),
            request_id: None,
            details: None,
        };
        assert_eq!(api(401).exit_code(), 4);
        assert_eq!(api(403).exit_code(), 1);
        assert_eq!(CliError::Transport("x".into()).exit_code(), 1);
    }

    #[test]
    fn json_form_keeps_the_servers_code() {
        let e = CliError::Api {
            status: 403,
            code: "grant_denied".into(),
            message: "no".into(),
            request_id: Some("req_1".into()),
            details: None,
        };
        assert_eq!(
            e.to_json(),
            json!({"error": {"code": "grant_denied", "message": "no", "status": 403, "request_id": "req_1"}})
        );
        assert_eq!(
            CliError::NotLoggedIn("no key".into()).to_json()["error"]["code"],
            "not_logged_in"
        );
    }
}
