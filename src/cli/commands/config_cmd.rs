//! `rkers config`: write a cluster.yml (asking on a terminal), or list versions and images.

use crate::cli::CliError;
use crate::cli::args::ConfigCmdArgs;
use crate::metadata::{self, Catalog, ClusterAnswers};
use std::io::IsTerminal;

pub fn run(args: &ConfigCmdArgs) -> Result<(), CliError> {
    let catalog = Catalog::load().map_err(CliError::failed)?;
    if args.system_images {
        let images = metadata::system_images_listing(&catalog, args.version.as_deref(), args.all)
            .map_err(CliError::failed)?;
        for image in images {
            super::super::print_out(format_args!("{image}\n"))?;
        }
        return Ok(());
    }
    if args.list_version {
        for v in metadata::list_versions(&catalog, args.all) {
            super::super::print_out(format_args!("{v}\n"))?;
        }
        return Ok(());
    }
    // Without a terminal there is nobody to ask: the defaults alone are a cluster.yml whose
    // one node has no address, no success to report. Refused before anything else is asked.
    if !args.empty && !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(
            "`rkers config` asks about the cluster, but standard input is not a terminal: run \
             it on a terminal, or pass --empty to write a cluster.yml to fill in"
                .into(),
        ));
    }
    // Decided before any question is asked, so nobody answers them for nothing.
    let replacing = !args.print && args.name.exists();
    if replacing && !args.force && !confirm_replace(&args.name)? {
        return Err(CliError::Failed(format!(
            "{} was left as it is: nothing was written",
            args.name.display()
        )));
    }
    let answers = if args.empty {
        ClusterAnswers::empty()
    } else {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut output = std::io::stdout();
        metadata::prompt_answers(&mut input, &mut output, &catalog)
            .map_err(|e| CliError::Failed(format!("reading answers: {e}")))?
    };
    let text = metadata::generate_cluster_yml(&answers);
    if args.print {
        return super::super::print_out(format_args!("Configuration File: \n{text}"));
    }
    if replacing {
        let backup =
            crate::state::timestamped_backup_path(&args.name, time::OffsetDateTime::now_utc());
        std::fs::copy(&args.name, &backup).map_err(|e| {
            CliError::Failed(format!(
                "cannot keep {} as {}: {e}; nothing was written",
                args.name.display(),
                backup.display()
            ))
        })?;
        crate::output::stderr_line(format_args!(
            "kept the previous {} as {}",
            args.name.display(),
            backup.display()
        ));
    }
    metadata::write_cluster_yml(&args.name, &text)
        .map_err(|e| CliError::Failed(format!("writing {}: {e}", args.name.display())))?;
    crate::output::stderr_line(format_args!("wrote {}", args.name.display()));
    Ok(())
}

/// Whether an existing file may be replaced: asked on a terminal; without one nobody can
/// answer, so it is a usage error unless `--force` was given.
fn confirm_replace(path: &std::path::Path) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::Usage(format!(
            "{} already exists and standard input is not a terminal to ask: pass --force to \
             replace it (the old file is kept as a backup) or --name to write another file",
            path.display()
        )));
    }
    crate::output::stderr_prompt(format_args!(
        "{} already exists. Replace it (the old file is kept as a backup)? [y/N]: ",
        path.display()
    ));
    let mut answer = String::new();
    std::io::BufRead::read_line(&mut std::io::stdin().lock(), &mut answer)
        .map_err(|e| CliError::Failed(format!("cannot read the answer: {e}")))?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}
