# The flight recorder's image (deploy/, docs/flight-recorder.md): built with the Rust
# toolchain, run on distroless as a non-root user. Only the spark-triage binary is in it.
#   docker build -t spark-triage:0.1.0 .
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin spark-triage \
    && strip target/release/spark-triage

# glibc, CA certificates and a nonroot user (65532), nothing else: no shell.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/spark-triage /usr/local/bin/spark-triage
USER 65532:65532
VOLUME /data
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/spark-triage"]
CMD ["record", "/data", "--all-namespaces", "--rotate=1h", "--retain=7d", "--forget-after=15m", "--driver-poll-interval=60s", "--metrics-addr=0.0.0.0:9090"]
