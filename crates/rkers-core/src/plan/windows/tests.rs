//! Unit tests of the Windows worker plan.

use super::*;

#[test]
fn wins_names_trim_a_cutset_like_wins() {
    assert_eq!(wins_process_name("kubelet.exe"), "rancher-wins-kubelet");
    assert_eq!(
        wins_process_name("kube-proxy.exe"),
        "rancher-wins-kube-proxy"
    );
    assert_eq!(wins_process_name("nginx.exe"), "rancher-wins-ngin");
    assert_eq!(wins_process_name("flanneld.exe"), "rancher-wins-flanneld");
}

#[test]
fn list_values_with_spaces_or_quotes_are_refused() {
    assert!(check_wins_list_value("kubelet", "--v=2").is_ok());
    let err = check_wins_list_value("kubelet", "--node-labels=a b")
        .unwrap_err()
        .to_string();
    assert!(err.contains("kubelet") && err.contains("spaces"), "{err}");
    assert!(check_wins_list_value("x", "--a=\"b\"").is_err());
    assert!(check_wins_list_value("x", "").is_err());
}

#[test]
fn encoded_command_is_utf16le_base64() {
    // "a" → 0x61 0x00
    assert_eq!(encode_powershell("a"), "YQA=");
}

#[test]
fn wins_config_uses_the_keys_wins_reads() {
    let yaml = WinsConfig::for_processes(&[nginx_process()]).to_yaml();
    assert!(yaml.contains("white_list:"), "{yaml}");
    assert!(yaml.contains("processPaths:"), "{yaml}");
    assert!(yaml.contains("proxyPorts: []"), "{yaml}");
    assert!(!yaml.contains("whiteList"), "{yaml}");
}

#[test]
fn cli_args_join_lists_with_single_spaces() {
    let mut p = nginx_process();
    p.args = vec!["--a=1".into(), "--b".into()];
    p.exposes = vec![
        Expose {
            protocol: ExposeProtocol::Tcp,
            port: 1,
        },
        Expose {
            protocol: ExposeProtocol::Udp,
            port: 2,
        },
    ];
    p.source_vip_from_network = Some("vxlan0".into());
    assert_eq!(
        p.cli_args(Some("10.42.1.254")),
        vec![
            "cli",
            "prc",
            "run",
            "--path",
            r"c:\etc\nginx\nginx.exe",
            "--args",
            "--a=1 --b --source-vip=10.42.1.254",
            "--exposes",
            "TCP:1 UDP:2"
        ]
    );
}

#[test]
fn prefix_path_rules() {
    let mut cfg = RkeConfig {
        prefix_path: "/".into(),
        ..Default::default()
    };
    assert_eq!(windows_prefix_path(&cfg), "c:/");
    cfg.win_prefix_path = r"C:\".into();
    assert_eq!(windows_prefix_path(&cfg), "c:/");
    cfg.win_prefix_path = "d:/rke".into();
    assert_eq!(windows_prefix_path(&cfg), "d:/rke");
}

#[test]
fn remove_plan_covers_processes_rules_network_and_dirs() {
    let plan = remove_plan_windows("c:/", true);
    assert_eq!(plan.containers[0], KUBE_PROXY);
    let s = &plan.host_script;
    assert!(s.contains("Get-Process -Name 'rancher-wins-*'"));
    assert!(s.contains("-PolicyStore ActiveStore -Name 'rancher-wins-*'"));
    assert!(s.contains("Remove-HnsNetwork"));
    assert!(s.contains(r"'c:\var\lib\kubelet'"));
    // Unregistering runs detached, after the step has reported back.
    let later = encode_powershell(
        "Start-Sleep -Seconds 5\nStop-Service -Name 'rancher-wins' -ErrorAction SilentlyContinue\n\
         & 'c:\\etc\\rancher\\wins\\wins.exe' srv app run --unregister\n\
         Start-Sleep -Seconds 2\n\
         Remove-Item -Recurse -Force 'c:\\etc\\rancher\\wins' -ErrorAction SilentlyContinue\n",
    );
    assert!(s.contains(&later), "{s}");
    assert!(
        !remove_plan_windows("c:/", false)
            .host_script
            .contains("Start-Process")
    );
}

#[test]
fn orphan_sweep_compares_with_the_wins_server_start() {
    let s = orphan_cleanup_command();
    assert!(s.contains("Name='rancher-wins'"));
    assert!(s.contains("$p.StartTime -lt $serverStart"));
    // The sweep runs as a wins-managed PowerShell itself: it must not stop itself.
    assert!(s.contains("$p.Id -ne $PID"));
    assert!(s.contains("Remove-NetFirewallRule"));
    assert!(s.contains(r"'c:\etc\kubernetes\bin'"));
}
