//! The admin socket's wire format: one JSON request per line, one JSON response per line.
//!
//! Request: `{"command": "workspace_set_plan", "workspace_id": "ws_...", "plan": "pro"}`.
//! Response: `{"ok": true, "result": {...}}` or
//! `{"ok": false, "error": {"code": "invalid_input", "message": "..."}}`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Code, Error};

/// Longest request line accepted (requests are a few hundred bytes).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// One operator command. `restore` is not here: it copies a backup into a directory no
/// service runs on, so it never goes through a socket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    WorkspaceList,
    WorkspaceSetPlan {
        workspace_id: String,
        plan: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        monthly_credit_limit: Option<u64>,
    },
    /// `dest` is absolute (the client resolves it against its own working directory).
    Backup {
        dest: PathBuf,
    },
    Validate,
    RotateMasterKey,
    RevokeKeys {
        workspace_id: String,
    },
}

/// The answer to one request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ResponseError>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseError {
    pub code: String,
    pub message: String,
}

impl Response {
    pub fn from_result(result: Result<Value, Error>) -> Response {
        match result {
            Ok(v) => Response {
                ok: true,
                result: Some(v),
                error: None,
            },
            Err(e) => Response {
                ok: false,
                result: None,
                error: Some(ResponseError {
                    code: e.code.as_str().to_owned(),
                    message: e.message,
                }),
            },
        }
    }

    /// Back into a result on the client side.
    pub fn into_result(self) -> Result<Value, Error> {
        match (self.ok, self.result, self.error) {
            (true, Some(v), _) => Ok(v),
            (false, _, Some(e)) => {
                let code = Code::ALL
                    .iter()
                    .copied()
                    .find(|c| c.as_str() == e.code)
                    .unwrap_or(Code::Internal);
                Err(Error::new(code, e.message))
            }
            _ => Err(Error::new(
                Code::Internal,
                "the admin socket sent a malformed response",
            )),
        }
    }
}

/// Parses one request line; a bad line is `invalid_input` naming what is wrong.
///
/// Unknown fields are refused for every command: serde's `deny_unknown_fields` does not apply to
/// the variants of an internally tagged enum without fields (`{"command": "validate", "x": 1}`
/// would pass), so the fields given are compared with those of the request they made.
pub fn parse_request(line: &str) -> Result<Request, Error> {
    let bad = |e: serde_json::Error| Error::invalid_input(format!("admin request: {e}"));
    let given: Value = serde_json::from_str(line.trim()).map_err(bad)?;
    let request: Request = serde_json::from_value(given.clone()).map_err(bad)?;
    let known = serde_json::to_value(&request).map_err(bad)?;
    if let (Some(given), Some(known)) = (given.as_object(), known.as_object()) {
        if let Some((field, _)) = given
            .iter()
            .find(|(k, v)| !known.contains_key(*k) && !v.is_null())
        {
            return Err(Error::invalid_input(format!(
                "admin request: unknown field `{field}` for command {}",
                given.get("command").unwrap_or(&Value::Null)
            )));
        }
    }
    Ok(request)
}

/// A request line as received: UTF-8 is required, and a line that is not is answered like
/// any other malformed request.
pub fn decode_line(bytes: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(bytes).map_err(|e| {
        Error::invalid_input(format!(
            "admin request: not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })
}

/// The line (with its newline) that carries `value`.
pub fn encode_line<T: Serialize>(value: &T) -> Vec<u8> {
    let mut line = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_as_tagged_lines() {
        let r = Request::WorkspaceSetPlan {
            workspace_id: "ws_0000000000000001".into(),
            plan: "enterprise".into(),
            monthly_credit_limit: Some(9),
        };
        let line = encode_line(&r);
        assert!(line.ends_with(b"\n"));
        let text = std::str::from_utf8(&line).expect("utf8");
        assert!(text.contains(r#""command":"workspace_set_plan""#), "{text}");
        assert_eq!(parse_request(text).expect("parse"), r);
        assert_eq!(
            parse_request(r#"{"command":"validate"}"#).expect("parse"),
            Request::Validate
        );
    }

    #[test]
    fn bad_requests_are_named() {
        for bad in [
            "",
            "{}",
            r#"{"command":"drop_everything"}"#,
            r#"{"command":"backup","dest":"/x","extra":1}"#,
            r#"{"command":"revoke_keys"}"#,
            r#"{"command":"validate","force":true}"#,
            r#"{"command":"workspace_list","x":1}"#,
        ] {
            let e = parse_request(bad).expect_err(bad);
            assert_eq!(e.code, Code::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn lines_must_be_utf8() {
        assert_eq!(decode_line(b"{}\n").expect("utf8"), "{}\n");
        let e = decode_line(b"{\"command\":\"\xff\"}\n").expect_err("not utf8");
        assert_eq!(e.code, Code::InvalidInput);
        assert!(e.message.contains("offset 12"), "{}", e.message);
    }

    #[test]
    fn responses_carry_results_and_errors_back() {
        let ok = Response::from_result(Ok(serde_json::json!({"n": 1})));
        let back: Response = serde_json::from_slice(&encode_line(&ok)).expect("response json");
        assert_eq!(back.into_result().expect("ok")["n"], 1);
        let err = Response::from_result(Err(Error::not_found("workspace")));
        let e = err.into_result().expect_err("error");
        assert_eq!(e.code, Code::NotFound);
        assert_eq!(e.message, "workspace not found");
    }
}
