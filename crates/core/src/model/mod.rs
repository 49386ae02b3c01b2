//! The pure domain: what the tool knows about a pod, its events, and Spark's executor states.

pub mod cost;
pub mod driver;
pub mod driver_state;
mod event;
mod group;
mod interned;
mod operator;
mod pod;
pub mod quantity;
mod quota;
mod state;
mod wire;

pub use driver::DriverExecutor;
pub use event::{PodEvent, Related};
pub use group::{GroupKind, GroupRef, SchedGroup};
pub use interned::Text;
pub use operator::{
    MAX_HISTORY, MAX_RUNS, OperatorApp, OperatorKind, OperatorPhase, OperatorState, RestartPolicy,
    Schedule,
};
pub use pod::{
    ContainerSpec, ContainerState, ContainerStatus, DEFAULT_DRIVER_CONTAINER,
    DEFAULT_EXECUTOR_CONTAINER, Deletion, EXIT_EXCEPTION_ANNOTATION, ExecIdLabel, ExecutorPod,
    HOLD_EXPIRES, HOLD_FINALIZER, KILLED_AT, KILLED_BY, KUEUE_GATE, KUEUE_QUEUE_LABEL,
    LABEL_APP_ID, LABEL_APP_NAME, LABEL_EXEC_ID, LABEL_INACTIVE, LABEL_ROLE, LABEL_SPARK_VERSION,
    Labels, LimitSource, MemoryLimit, OwnerRef, PodCondition, PodStatus, Resources, Role,
    TOOL_DOMAIN, Terminated, Time, VOLCANO_GROUP_ANNOTATION, fmt_time, time,
};
pub use quota::{PodCharge, Quota, Refusal};
pub use state::ExecutorState;
pub use wire::{SparkLabels, WireIdentity, WireIdentityMeta};

#[doc(hidden)]
pub mod testing;
