//! Document processors by name: how a deployment's processor spec (`--processor`,
//! `IRONCLAD_PROCESSOR`) becomes the processor its workers run.
//!
//! A spec is a name, optionally followed by `:` and arguments for that processor
//! (`test:sleep=5s`). Each crate that provides a processor registers a factory under its name;
//! the binary, which links them all, asks the registry. A factory receives the arguments and
//! a context `C` chosen by the binary (its settings, the stored workflows), so this crate
//! depends on none of the processors it names.

use crate::processor::{Behaviour, DocumentProcessor, ScriptedProcessor, StandInProcessor};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A processor as the worker holds it.
pub type SharedProcessor = Arc<dyn DocumentProcessor>;

/// Makes one named processor from its spec's arguments and the binary's context.
pub type Factory<C> = Box<dyn Fn(&str, &C) -> Result<SharedProcessor, String> + Send + Sync>;

/// Why a spec did not give a processor.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// No processor is registered under the spec's name.
    #[error("unknown document processor {name:?}; known: {known}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// The named processor refused its arguments or context.
    #[error("invalid document processor {spec:?}: {reason}")]
    Invalid {
        /// The whole spec.
        spec: String,
        /// The factory's reason.
        reason: String,
    },
}

/// For a factory whose processor takes no arguments: refuses a spec that gives some
/// (`reading:fast` is a typo, not a setting).
pub fn no_arguments(args: &str) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!("takes no arguments, got {args:?}"))
    }
}

/// One registered processor.
pub struct Registration<C> {
    /// One line for `--help` and error messages.
    pub summary: &'static str,
    /// Whether it classifies and extracts with the case's workflow, so the binary must load
    /// the stored workflows (and pin cases to them) before building it.
    pub uses_workflows: bool,
    factory: Factory<C>,
}

/// Processors by name. `C` is what the binary hands every factory.
pub struct ProcessorRegistry<C> {
    by_name: BTreeMap<&'static str, Registration<C>>,
}

impl<C> Default for ProcessorRegistry<C> {
    fn default() -> Self {
        ProcessorRegistry {
            by_name: BTreeMap::new(),
        }
    }
}

impl<C> ProcessorRegistry<C> {
    /// The processors this crate provides, which need no context: `stand-in` (verifies the
    /// blob and counts pages) and `test:<behaviour>` (scripted failures, see
    /// [`Behaviour::parse`]).
    pub fn with_builtins() -> Self {
        let mut registry = ProcessorRegistry::default();
        registry.register(
            "stand-in",
            "verifies each blob and counts its pages; reads nothing",
            false,
            |args, _| {
                no_arguments(args)?;
                Ok(Arc::new(StandInProcessor::default()))
            },
        );
        registry.register(
            "test",
            "scripted behaviour for tests (test:sleep=5s, test:terminal, …)",
            false,
            |args, _| Ok(Arc::new(ScriptedProcessor::new(Behaviour::parse(args)?))),
        );
        registry
    }

    /// Registers `name`, replacing any processor registered under it before.
    pub fn register(
        &mut self,
        name: &'static str,
        summary: &'static str,
        uses_workflows: bool,
        factory: impl Fn(&str, &C) -> Result<SharedProcessor, String> + Send + Sync + 'static,
    ) {
        self.by_name.insert(
            name,
            Registration {
                summary,
                uses_workflows,
                factory: Box::new(factory),
            },
        );
    }

    /// The registration a spec names, with the spec's arguments (empty without a `:`). An
    /// empty spec names `stand-in`.
    pub fn lookup<'s>(&self, spec: &'s str) -> Result<(&Registration<C>, &'s str), RegistryError> {
        let spec = spec.trim();
        let (name, args) = match spec.split_once(':') {
            Some((name, args)) => (name, args),
            None if spec.is_empty() => ("stand-in", ""),
            None => (spec, ""),
        };
        match self.by_name.get(name) {
            Some(registration) => Ok((registration, args)),
            None => Err(RegistryError::Unknown {
                name: name.to_owned(),
                known: self.names().collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Builds the processor `spec` names.
    pub fn build(&self, spec: &str, context: &C) -> Result<SharedProcessor, RegistryError> {
        let (registration, args) = self.lookup(spec)?;
        (registration.factory)(args, context).map_err(|reason| RegistryError::Invalid {
            spec: spec.trim().to_owned(),
            reason,
        })
    }

    /// The registered names, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_name.keys().copied()
    }

    /// Each registered name with its summary, in order.
    pub fn summaries(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.by_name.iter().map(|(name, r)| (*name, r.summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_found_by_name_with_their_arguments() {
        let registry = ProcessorRegistry::<()>::with_builtins();
        for (spec, name) in [
            ("stand-in", "stand-in"),
            ("", "stand-in"),
            ("  stand-in ", "stand-in"),
            ("test:sleep=5s", "test"),
            ("test:terminal", "test"),
        ] {
            let built = registry.build(spec, &()).map(|p| p.name());
            assert!(built.is_ok(), "{spec:?}: {built:?}");
            assert_eq!(
                registry.lookup(spec).map(|(r, _)| r.uses_workflows),
                Ok(false)
            );
            let _ = name;
        }
        assert_eq!(
            registry.lookup("test:sleep=5s").map(|(_, a)| a),
            Ok("sleep=5s")
        );
    }

    #[test]
    fn unknown_names_and_bad_arguments_say_what_is_known_and_why() {
        let registry = ProcessorRegistry::<()>::with_builtins();
        match registry.build("ocr", &()) {
            Err(RegistryError::Unknown { name, known }) => {
                assert_eq!(name, "ocr");
                assert_eq!(known, "stand-in, test");
            }
            other => panic!("expected Unknown, got {:?}", other.map(|p| p.name())),
        }
        assert!(matches!(
            registry.build("stand-in:fast", &()).err(),
            Some(RegistryError::Invalid { .. })
        ));
        let err = registry.build("test:nope", &()).err();
        assert!(
            matches!(&err, Some(RegistryError::Invalid { spec, .. }) if spec == "test:nope"),
            "{err:?}"
        );
    }

    #[test]
    fn a_binary_registers_its_own_processors_with_its_context() {
        struct Settings {
            fail: bool,
        }
        let mut registry = ProcessorRegistry::<Settings>::with_builtins();
        registry.register(
            "reading",
            "reads with the workflow",
            true,
            |args, s: &Settings| {
                if s.fail {
                    Err(format!("no workflow ({args})"))
                } else {
                    Ok(Arc::new(StandInProcessor::default()))
                }
            },
        );
        assert_eq!(
            registry.names().collect::<Vec<_>>(),
            ["reading", "stand-in", "test"]
        );
        let (reading, _) = registry.lookup("reading").expect("registered");
        assert!(reading.uses_workflows);
        assert!(registry.build("reading", &Settings { fail: false }).is_ok());
        assert_eq!(
            registry
                .build("reading:x", &Settings { fail: true })
                .err()
                .map(|e| e.to_string()),
            Some("invalid document processor \"reading:x\": no workflow (x)".into())
        );
    }
}
