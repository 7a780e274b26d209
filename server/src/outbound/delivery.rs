//! Handing a `sending` record to its provider, outside any store transaction (a provider call
//! takes up to seconds; the engine's writer must not wait for it).

use serde_json::{json, Map, Value};

use crate::integrations::{
    self, customerio, smtp, voice, CustomerioConfig, HttpClient, SmtpConfig, VoiceConfig,
};

use super::Delivered;

/// What Customer.io is asked to do.
#[derive(Clone, Debug)]
pub enum CioWrite {
    Identify {
        attributes: Map<String, Value>,
    },
    Track {
        name: String,
        data: Map<String, Value>,
    },
}

/// One provider call, fully rendered inside the transaction that moved its record to
/// `sending` (so what is sent is exactly what was recorded).
#[derive(Clone, Debug)]
pub enum Job {
    Email {
        config: SmtpConfig,
        email: smtp::Email,
    },
    Call {
        config: VoiceConfig,
        to: String,
        script: String,
        status_callback: String,
    },
    Cio {
        config: CustomerioConfig,
        /// The Customer.io customer id (the customer's `cio_id`, else our customer id).
        cio_customer_id: String,
        write: CioWrite,
    },
}

/// A job bound to the record it delivers.
#[derive(Clone, Debug)]
pub struct Dispatch {
    pub outbound_id: String,
    pub job: Job,
}

/// Performs the job. A provider error is `Failed` when the provider refused or could not be
/// reached, `Unknown` when the request may have been acted on (a timeout after sending); the
/// adapters retry only failures that provably sent nothing.
pub async fn perform(http: &HttpClient, job: &Job) -> Delivered {
    let out: Result<(String, Value), integrations::ProviderError> = match job {
        Job::Email { config, email } => smtp::send(config, http.destinations(), email)
            .await
            .map(|sent| (sent.message_id, json!({ "smtp_response": sent.response }))),
        Job::Call {
            config,
            to,
            script,
            status_callback,
        } => voice::place_call(http, config, to, script, status_callback)
            .await
            .map(|call| (call.sid, json!({ "call_status": call.status }))),
        Job::Cio {
            config,
            cio_customer_id,
            write,
        } => match write {
            CioWrite::Identify { attributes } => {
                customerio::identify(http, config, cio_customer_id, attributes)
                    .await
                    .map(|()| {
                        (
                            format!("customers/{cio_customer_id}"),
                            json!({ "action": "identify" }),
                        )
                    })
            }
            CioWrite::Track { name, data } => {
                customerio::track(http, config, cio_customer_id, name, data)
                    .await
                    .map(|()| {
                        (
                            format!("customers/{cio_customer_id}/events"),
                            json!({ "action": "track", "event": name }),
                        )
                    })
            }
        },
    };
    match out {
        Ok((provider_id, detail)) => Delivered::Ok {
            provider_id,
            detail,
        },
        Err(e) if e.maybe_delivered => Delivered::Unknown { message: e.message },
        Err(e) => Delivered::Failed { message: e.message },
    }
}
