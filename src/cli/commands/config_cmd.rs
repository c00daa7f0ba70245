//! `rkers config`: write a cluster.yml (asking on a terminal), or list versions and images.

use crate::cli::CliError;
use crate::cli::args::ConfigCmdArgs;
use crate::metadata::{self, Catalog, ClusterAnswers};
use std::io::IsTerminal;

pub fn run(args: &ConfigCmdArgs) -> Result<(), CliError> {
    let catalog = Catalog::load().map_err(|e| CliError::Failed(e.to_string()))?;
    if args.system_images {
        let images = metadata::system_images_listing(&catalog, args.version.as_deref(), args.all)
            .map_err(|e| CliError::Failed(e.to_string()))?;
        for image in images {
            println!("{image}");
        }
        return Ok(());
    }
    if args.list_version {
        for v in metadata::list_versions(&catalog, args.all) {
            println!("{v}");
        }
        return Ok(());
    }
    let answers = if args.empty {
        ClusterAnswers::empty()
    } else if std::io::stdin().is_terminal() {
        let stdin = std::io::stdin();
        let mut input = stdin.lock();
        let mut output = std::io::stdout();
        metadata::prompt_answers(&mut input, &mut output, &catalog)
            .map_err(|e| CliError::Failed(format!("reading answers: {e}")))?
    } else {
        // Without a terminal there is nobody to ask: write the defaults.
        ClusterAnswers::defaults(&catalog)
    };
    let text = metadata::generate_cluster_yml(&answers);
    if args.print {
        print!("Configuration File: \n{text}");
        return Ok(());
    }
    metadata::write_cluster_yml(&args.name, &text)
        .map_err(|e| CliError::Failed(format!("writing {}: {e}", args.name.display())))?;
    eprintln!("wrote {}", args.name.display());
    Ok(())
}
