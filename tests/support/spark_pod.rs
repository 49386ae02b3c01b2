//! An executor pod as Spark's driver makes one (its labels and the owner reference to the
//! driver pod), for the tests that create them on a real cluster (tests/control_plane/,
//! tests/real_node/).

/// The pod `{app}-exec-{id}` of app `{app}` (`spark-app-name`) with id `app_id`, owned by the
/// pod `{app}-driver` whose uid is `driver_uid`. `annotations` is a YAML flow mapping's body,
/// `spec` more lines of the spec (two spaces in), `container` the container's lines after its
/// name (four spaces in).
pub struct Executor<'a> {
    pub app: &'a str,
    pub app_id: &'a str,
    pub namespace: &'a str,
    pub driver_uid: &'a str,
    pub id: u32,
    pub annotations: &'a str,
    pub grace: u32,
    pub spec: &'a str,
    pub container: &'a str,
}

impl Executor<'_> {
    pub fn manifest(&self) -> String {
        let Executor {
            app,
            app_id,
            namespace,
            driver_uid,
            id,
            annotations,
            grace,
            spec,
            container,
        } = self;
        format!(
            r#"apiVersion: v1
kind: Pod
metadata:
  name: {app}-exec-{id}
  namespace: {namespace}
  labels:
    spark-app-selector: {app_id}
    spark-app-name: {app}
    spark-role: executor
    spark-exec-id: "{id}"
    spark-exec-resourceprofile-id: "0"
  annotations: {{{annotations}}}
  ownerReferences:
  - apiVersion: v1
    kind: Pod
    name: {app}-driver
    uid: {driver_uid}
    controller: true
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: {grace}
  {spec}
  containers:
  - name: spark-kubernetes-executor
    {container}
"#
        )
    }
}

/// The driver pod `{app}-driver` of app `{app}` (id `app_id`): `spec` more lines of the spec
/// (two spaces in), `container` the container's lines after its name (four spaces in).
pub fn driver(app: &str, app_id: &str, namespace: &str, spec: &str, container: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {app}-driver
  namespace: {namespace}
  labels:
    spark-app-selector: {app_id}
    spark-app-name: {app}
    spark-role: driver
spec:
  restartPolicy: Never
  {spec}
  containers:
  - name: spark-kubernetes-driver
    {container}
"#
    )
}
