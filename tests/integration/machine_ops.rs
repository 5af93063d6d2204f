//! One machine's changes over HTTP (microversion 1.20): `PATCH …/machines/{m}` of the kubelet
//! version, container runtime and OS image (in place or by replacement, as the fake driver
//! plans it), and `POST …/machines/{m}/actions/replace|reboot`, through the conductor to a
//! running machine whose status says how the change was applied; the refusals (a path that is
//! no machine field, the version-skew rules, a busy machine, a lower microversion, another
//! project's machine) change nothing; a failure of the driver leaves the machine `Failed`. On
//! PostgreSQL and SQLite.

use fleetyard::conductor::Conductor;
use fleetyard::config::FakeDriverSection;
use reqwest::header::HeaderMap;
use rstest::rstest;
use serde_json::{json, Value};

use crate::helpers::{
    at, complete_cluster_with, conductor, conductor_from, drain, events_of, exec_sql, instant,
    machine_updates as update, spawn_keeping, Backend, Resp, TestApp,
};

/// The control plane version of the clusters these tests make (their `kube_tag`).
const CONTROL_PLANE: &str = "v1.31.4";

/// The app, its conductor, a complete cluster and the uuid of its worker machine.
struct Env {
    app: TestApp,
    conductor: Conductor,
    h: HeaderMap,
    cluster: String,
    worker: String,
}

impl Env {
    async fn new(backend: Backend) -> Env {
        let (app, settings) = spawn_keeping(backend, crate::helpers::instant_settings).await;
        let conductor = conductor_from(&app, &settings);
        let h = at(&app.headers, "latest");
        let cluster = complete_cluster_with(
            &app,
            &conductor,
            "k8s",
            json!({"kube_tag": CONTROL_PLANE}),
            &h,
        )
        .await;
        let listed = app
            .get_as(&format!("/v1/clusters/{cluster}/machines?role=worker"), &h)
            .await;
        assert_eq!(listed.status, 200, "{}", listed.text);
        let worker = listed.body["machines"][0]["uuid"]
            .as_str()
            .expect("a worker machine")
            .to_string();
        Env {
            app,
            conductor,
            h,
            cluster,
            worker,
        }
    }

    fn path(&self, machine: &str) -> String {
        format!("/v1/clusters/{}/machines/{machine}", self.cluster)
    }

    async fn show(&self, machine: &str) -> Value {
        let r = self.app.get_as(&self.path(machine), &self.h).await;
        assert_eq!(r.status, 200, "{}", r.text);
        r.body
    }

    async fn patch(&self, machine: &str, ops: Value) -> Resp {
        self.app.patch_as(&self.path(machine), &ops, &self.h).await
    }

    async fn action(&self, machine: &str, action: &str) -> Resp {
        self.app
            .post_as(
                &format!("{}/actions/{action}", self.path(machine)),
                &json!({}),
                &self.h,
            )
            .await
    }

    /// `(event type, outcome)` of the machine's notifications, in order.
    async fn events(&self, machine: &str) -> Vec<(String, String)> {
        events_of(&self.app, machine)
            .await
            .into_iter()
            .map(|(t, o, _)| (t, o))
            .collect()
    }
}

fn kubelet(v: &str) -> Value {
    json!([{"op": "replace", "path": "/versions/kubelet", "value": v}])
}

#[rstest]
#[tokio::test]
async fn a_patch_level_kubelet_change_is_made_in_place(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let before = env.show(&w).await;
    assert_eq!(before["status"]["versions"]["kubelet"], CONTROL_PLANE);

    let r = env.patch(&w, kubelet("1.31.6")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["uuid"], w.as_str());
    assert_eq!(r.body["spec"]["versions"]["kubelet"], "v1.31.6");
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(
        r.body["status"]["versions"]["kubelet"], CONTROL_PLANE,
        "the node runs the old version until the driver is done"
    );
    assert_eq!(
        env.show(&w).await,
        r.body,
        "the answer is the machine as stored"
    );
    assert_eq!(env.events(&w).await, update(&["pending"]));

    drain(&env.conductor).await;
    let after = env.show(&w).await;
    assert_eq!(after["status"]["phase"], "Running", "{after}");
    assert_eq!(after["status"]["last_change"], "InPlace");
    assert_eq!(after["status"]["versions"]["kubelet"], "v1.31.6");
    assert_eq!(after["status"]["provider_id"], format!("fake://{w}"));
    assert_eq!(after["status"]["error_reason"], Value::Null);
    assert_eq!(after["name"], before["name"]);
    assert_eq!(env.events(&w).await, update(&["pending", "success"]));
}

#[rstest]
#[tokio::test]
async fn a_minor_version_runtime_or_image_change_is_made_by_replacement(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let r = env.patch(&w, kubelet("v1.29.10")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&env.conductor).await;
    let after = env.show(&w).await;
    assert_eq!(after["status"]["phase"], "Running", "{after}");
    assert_eq!(after["status"]["last_change"], "Replace");
    assert_eq!(after["status"]["versions"]["kubelet"], "v1.29.10");
    assert_eq!(
        after["status"]["provider_id"],
        format!("fake://{w}/2"),
        "a new server"
    );
    assert_eq!(after["status"]["node_ref"], after["name"], "the same name");

    // The runtime and the image, in one patch: one more replacement.
    let r = env
        .patch(
            &w,
            json!([
                {"op": "add", "path": "/container_runtime/name", "value": "containerd"},
                {"op": "add", "path": "/container_runtime/version", "value": "1.7.22"},
                {"op": "replace", "path": "/os_image", "value": "fedora-coreos-41"},
            ]),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(
        r.body["spec"]["container_runtime"],
        json!({"name": "containerd", "version": "1.7.22"})
    );
    assert_eq!(r.body["spec"]["os_image"], "fedora-coreos-41");
    drain(&env.conductor).await;
    let after = env.show(&w).await;
    assert_eq!(after["status"]["last_change"], "Replace");
    assert_eq!(after["status"]["provider_id"], format!("fake://{w}/3"));
    assert_eq!(
        env.events(&w).await,
        update(&["pending", "success", "pending", "success"])
    );
}

#[rstest]
#[tokio::test]
async fn refused_patches_change_nothing(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let before = env.show(&w).await;
    let cases = [
        (
            kubelet("v1.32.0"),
            "Kubelet version v1.32.0 is newer than the control plane version v1.31.4; a \
             kubelet may not be newer than its control plane.",
        ),
        (
            kubelet("v1.27.3"),
            "Kubelet version v1.27.3 is more than 3 minor versions older than the control \
             plane version v1.31.4; the oldest supported kubelet is v1.28.",
        ),
        (
            kubelet("1.31"),
            "Invalid Kubernetes version '1.31': expected the form v<major>.<minor>.<patch>, \
             e.g. v1.31.4.",
        ),
        (
            json!([{"op": "replace", "path": "/flavor", "value": "m1.large"}]),
            "'/flavor' cannot be changed on a machine: a patch may change /versions/kubelet, \
             /container_runtime/name, /container_runtime/version, /os_image.",
        ),
        (
            json!([{"op": "remove", "path": "/os_image"}]),
            "'/os_image' cannot be removed from a machine; replace it instead.",
        ),
    ];
    for (ops, detail) in cases {
        let r = env.patch(&w, ops.clone()).await;
        r.assert_error(400, detail);
    }
    assert_eq!(env.show(&w).await, before, "nothing changed");
    assert!(env.events(&w).await.is_empty(), "no notification");
    assert!(drain(&env.conductor).await.is_empty(), "no job");
}

#[rstest]
#[tokio::test]
async fn a_busy_or_deleting_machine_is_a_409(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let r = env.patch(&w, kubelet("v1.31.5")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let busy = env.show(&w).await;
    let name = busy["name"].as_str().expect("name").to_string();
    let sentence = format!(
        "Machine {name} has an operation in progress (it is Provisioning); try again when it \
         is done."
    );
    env.patch(&w, kubelet("v1.31.6"))
        .await
        .assert_error(409, &sentence);
    env.action(&w, "replace").await.assert_error(409, &sentence);
    env.action(&w, "reboot").await.assert_error(409, &sentence);
    assert_eq!(env.show(&w).await, busy);
    assert_eq!(env.events(&w).await, update(&["pending"]));
    assert_eq!(drain(&env.conductor).await.len(), 1, "one job");

    exec_sql(
        &env.app.db.url,
        &[format!(
            "UPDATE machine SET phase = 'Deleting' WHERE uuid = '{w}'"
        )],
    )
    .await;
    let going = format!("Machine {name} is being deleted.");
    env.patch(&w, kubelet("v1.31.6"))
        .await
        .assert_error(409, &going);
    env.action(&w, "reboot").await.assert_error(409, &going);
}

#[rstest]
#[tokio::test]
async fn replace_and_reboot_run_to_the_end(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let before = env.show(&w).await;

    let r = env.action(&w, "replace").await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(
        r.body["spec"], before["spec"],
        "a replacement changes no spec"
    );
    drain(&env.conductor).await;
    let replaced = env.show(&w).await;
    assert_eq!(replaced["status"]["phase"], "Running");
    assert_eq!(replaced["status"]["last_change"], "Replace");
    assert_eq!(replaced["status"]["provider_id"], format!("fake://{w}/2"));

    // A body is optional.
    let r = env
        .app
        .request(
            reqwest::Method::POST,
            &format!("{}/actions/reboot", env.path(&w)),
            &env.h,
            None,
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    drain(&env.conductor).await;
    let rebooted = env.show(&w).await;
    assert_eq!(rebooted["status"]["phase"], "Running");
    assert_eq!(
        rebooted["status"]["last_change"], "Replace",
        "a reboot is no change"
    );
    assert_eq!(
        rebooted["status"]["provider_id"],
        format!("fake://{w}/2"),
        "the same server"
    );
    assert_eq!(
        env.events(&w).await,
        update(&["pending", "success", "pending", "success"])
    );

    // An action takes no argument.
    let r = env
        .app
        .post_as(
            &format!("{}/actions/reboot", env.path(&w)),
            &json!({"hard": true}),
            &env.h,
        )
        .await;
    r.assert_error(400, "Unknown attribute for argument reboot: hard");
}

#[rstest]
#[tokio::test]
async fn a_driver_failure_leaves_the_machine_failed_and_a_new_change_may_follow(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let broken = conductor(
        &env.app,
        FakeDriverSection {
            fail_operations: "machine_update".into(),
            ..instant()
        },
    );
    let r = env.patch(&w, kubelet("v1.31.6")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    drain(&broken).await;
    let failed = env.show(&w).await;
    assert_eq!(failed["status"]["phase"], "Failed", "{failed}");
    assert_eq!(failed["status"]["error_reason"], "UpdateError");
    assert_eq!(
        failed["status"]["error_message"],
        "The fake driver simulated a failure of 'machine_update' ([fake_driver] \
         fail_operations = machine_update)."
    );
    assert_eq!(failed["spec"]["versions"]["kubelet"], "v1.31.6");
    let events = events_of(&env.app, &w).await;
    assert_eq!(
        events
            .last()
            .map(|(t, o, p)| (t.as_str(), o.as_str(), p.as_str())),
        Some(("magnum.machine.update", "failure", "ERROR"))
    );

    // From Failed, the same change again is the way forward: it runs again, by replacement.
    let r = env.patch(&w, kubelet("v1.31.6")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body["status"]["phase"], "Provisioning");
    assert_eq!(r.body["status"]["error_reason"], Value::Null);
    drain(&env.conductor).await;
    let after = env.show(&w).await;
    assert_eq!(after["status"]["phase"], "Running", "{after}");
    assert_eq!(after["status"]["last_change"], "Replace");
    assert_eq!(after["status"]["versions"]["kubelet"], "v1.31.6");
    // On a running machine the same spec again changes nothing.
    let r = env.patch(&w, kubelet("v1.31.6")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    assert_eq!(r.body, after);
    assert!(drain(&env.conductor).await.is_empty(), "no job");
    // A failed reboot, then a reboot again.
    let failing = conductor(
        &env.app,
        FakeDriverSection {
            fail_operations: "machine_reboot".into(),
            ..instant()
        },
    );
    assert_eq!(env.action(&w, "reboot").await.status, 202);
    drain(&failing).await;
    assert_eq!(env.show(&w).await["status"]["error_reason"], "RebootError");
    assert_eq!(env.action(&w, "reboot").await.status, 202);
    drain(&env.conductor).await;
    assert_eq!(env.show(&w).await["status"]["phase"], "Running");
}

#[rstest]
#[tokio::test]
async fn below_1_20_and_across_projects_the_routes_are_refused(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let before = env.show(&w).await;
    let old = at(&env.app.headers, "1.19");
    let r = env
        .app
        .patch_as(&env.path(&w), &kubelet("v1.31.6"), &old)
        .await;
    r.assert_framework_error(406);
    for action in ["replace", "reboot"] {
        let r = env
            .app
            .post_as(
                &format!("{}/actions/{action}", env.path(&w)),
                &json!({}),
                &old,
            )
            .await;
        r.assert_framework_error(406);
    }

    let b = at(&env.app.project_b(), "latest");
    let missing = format!("Cluster {} could not be found.", env.cluster);
    env.app
        .patch_as(&env.path(&w), &kubelet("v1.31.6"), &b)
        .await
        .assert_error(404, &missing);
    env.app
        .post_as(&format!("{}/actions/replace", env.path(&w)), &json!({}), &b)
        .await
        .assert_error(404, &missing);
    // A machine the cluster does not have.
    env.patch("no-such-machine", kubelet("v1.31.6"))
        .await
        .assert_error(404, "Machine no-such-machine could not be found.");
    assert_eq!(env.show(&w).await, before);
    assert!(env.events(&w).await.is_empty());
}

#[rstest]
#[tokio::test]
async fn a_change_that_takes_time_is_asked_after_until_the_driver_is_done(
    #[values(Backend::Postgres, Backend::Sqlite)] backend: Backend,
) {
    let env = Env::new(backend).await;
    let w = env.worker.clone();
    let slow = conductor(
        &env.app,
        FakeDriverSection {
            update_seconds: 1,
            ..instant()
        },
    );
    let r = env.patch(&w, kubelet("v1.31.6")).await;
    assert_eq!(r.status, 202, "{}", r.text);
    let first = slow.try_execute_one().await.expect("job");
    assert!(
        matches!(first, fleetyard::conductor::Outcome::Retried { .. }),
        "{first:?}"
    );
    assert_eq!(env.show(&w).await["status"]["phase"], "Provisioning");
    assert_eq!(env.events(&w).await, update(&["pending"]));
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let outcomes = drain(&slow).await;
    assert!(
        matches!(
            outcomes.as_slice(),
            [fleetyard::conductor::Outcome::Completed { .. }]
        ),
        "{outcomes:?}"
    );
    let after = env.show(&w).await;
    assert_eq!(after["status"]["phase"], "Running");
    assert_eq!(after["status"]["last_change"], "InPlace");
    assert_eq!(env.events(&w).await, update(&["pending", "success"]));
}
