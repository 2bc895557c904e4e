//! Opening a session from [`ZenohOptions`].

use zenoh::{Config, Session, Wait};

use super::{Role, ZenohError, ZenohOptions, DEFAULT_ENDPOINT, MAX_MESSAGE};

fn set(config: &mut Config, key: &'static str, value: &str) -> Result<(), ZenohError> {
    config
        .insert_json5(key, value)
        .map_err(|e| ZenohError::Config {
            key,
            value: value.to_owned(),
            reason: e.to_string(),
        })
}

/// A JSON list of endpoints.
fn list(endpoints: &[String]) -> String {
    let quoted: Vec<String> = endpoints
        .iter()
        .map(|e| serde_json::Value::String(e.clone()).to_string())
        .collect();
    format!("[{}]", quoted.join(","))
}

impl ZenohOptions {
    /// The Zenoh configuration these options make for `role`.
    ///
    /// # Errors
    /// [`ZenohError::ConfigFile`] for a file Zenoh cannot read,
    /// [`ZenohError::Config`] for an endpoint it refuses.
    pub fn config(&self, role: Role) -> Result<Config, ZenohError> {
        let mut config = match &self.config_file {
            Some(path) => Config::from_file(path).map_err(|e| ZenohError::ConfigFile {
                path: path.clone(),
                reason: e.to_string(),
            })?,
            None => {
                let mut c = Config::default();
                set(&mut c, "mode", "\"peer\"")?;
                set(&mut c, "scouting/multicast/enabled", "false")?;
                set(&mut c, "scouting/gossip/enabled", "false")?;
                let here = [DEFAULT_ENDPOINT.to_owned()];
                let (listen, connect): (&[String], &[String]) = match role {
                    Role::Publisher => (&here, &[]),
                    Role::Subscriber => (&[], &here),
                };
                set(&mut c, "listen/endpoints", &list(listen))?;
                set(&mut c, "connect/endpoints", &list(connect))?;
                let max = MAX_MESSAGE.to_string();
                set(&mut c, "transport/link/rx/max_message_size", &max)?;
                c
            }
        };
        if !self.listen.is_empty() {
            set(&mut config, "listen/endpoints", &list(&self.listen))?;
        }
        if !self.connect.is_empty() {
            set(&mut config, "connect/endpoints", &list(&self.connect))?;
        }
        Ok(config)
    }

    /// The endpoints a session for `role` connects to, for messages.
    pub fn connect_endpoints(&self, role: Role) -> String {
        if !self.connect.is_empty() {
            self.connect.join(", ")
        } else if let Some(f) = &self.config_file {
            format!("the endpoints of {}", f.display())
        } else if role == Role::Subscriber {
            DEFAULT_ENDPOINT.to_owned()
        } else {
            "none".to_owned()
        }
    }
}

/// Opens a session for `role` with `options`.
///
/// # Errors
/// As [`ZenohOptions::config`]; [`ZenohError::Session`] when Zenoh cannot
/// open it (an endpoint that cannot be bound, a missing TLS file).
pub fn open_session(options: &ZenohOptions, role: Role) -> Result<Session, ZenohError> {
    let config = options.config(role)?;
    zenoh::open(config).wait().map_err(|e| ZenohError::Session {
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn get(c: &Config, key: &str) -> String {
        c.get_json(key).unwrap()
    }

    #[test]
    fn the_defaults_keep_everything_on_loopback() {
        let c = ZenohOptions::default().config(Role::Publisher).unwrap();
        assert_eq!(get(&c, "scouting/multicast/enabled"), "false");
        assert_eq!(get(&c, "scouting/gossip/enabled"), "false");
        assert_eq!(get(&c, "listen/endpoints"), r#"["tcp/127.0.0.1:7447"]"#);
        assert_eq!(get(&c, "connect/endpoints"), "[]");
        let c = ZenohOptions::default().config(Role::Subscriber).unwrap();
        assert_eq!(get(&c, "listen/endpoints"), "[]");
        assert_eq!(get(&c, "connect/endpoints"), r#"["tcp/127.0.0.1:7447"]"#);
        assert_eq!(get(&c, "scouting/multicast/enabled"), "false");
    }

    #[test]
    fn endpoints_replace_the_defaults_and_bad_ones_are_named() {
        let o = ZenohOptions {
            listen: vec!["tcp/127.0.0.1:7500".into()],
            ..ZenohOptions::default()
        };
        let c = o.config(Role::Publisher).unwrap();
        assert_eq!(get(&c, "listen/endpoints"), r#"["tcp/127.0.0.1:7500"]"#);
        let o = ZenohOptions {
            connect: vec!["not an endpoint".into()],
            ..ZenohOptions::default()
        };
        let e = o.config(Role::Subscriber).unwrap_err();
        assert!(
            matches!(
                &e,
                ZenohError::Config {
                    key: "connect/endpoints",
                    ..
                }
            ),
            "{e}"
        );
        let o = ZenohOptions {
            config_file: Some("/nonexistent/zenoh.json5".into()),
            ..ZenohOptions::default()
        };
        let e = o.config(Role::Subscriber).unwrap_err();
        assert!(matches!(&e, ZenohError::ConfigFile { .. }), "{e}");
    }
}
