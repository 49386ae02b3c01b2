"""Fills a loopback S3 server (moto's, started with INITIAL_NO_AUTH_ACTION_COUNT=3, so that it
checks every request's signature after this script's first three IAM calls) for
tests/integration/object_store.rs: a user with an access key allowed s3:*, a bucket
`spark-logs`, and the real-Spark event logs of tests/fixtures/eventlog/real-spark-k8s*/ under
`spark-events/` as `spark.eventLog.dir` holds them. Prints the key as JSON on stdout.

    python scripts/s3/fill.py ENDPOINT FIXTURES_DIR
"""
import json
import os
import sys

import boto3

endpoint, fixtures = sys.argv[1], sys.argv[2]
anon = dict(endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="setup", aws_secret_access_key="setup")
iam = boto3.client("iam", **anon)
iam.create_user(UserName="spark-triage")
key = iam.create_access_key(UserName="spark-triage")["AccessKey"]
iam.put_user_policy(UserName="spark-triage", PolicyName="s3", PolicyDocument=json.dumps({
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
}))
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                  aws_access_key_id=key["AccessKeyId"],
                  aws_secret_access_key=key["SecretAccessKey"])
s3.create_bucket(Bucket="spark-logs")
n = 0
for codec in sorted(os.listdir(fixtures)):
    if not codec.startswith("real-spark-k8s"):
        continue
    root = os.path.join(fixtures, codec)
    for dirpath, _, files in os.walk(root):
        for f in files:
            path = os.path.join(dirpath, f)
            s3.upload_file(path, "spark-logs", "spark-events/" + os.path.relpath(path, root))
            n += 1
print(json.dumps({"access_key_id": key["AccessKeyId"],
                  "secret_access_key": key["SecretAccessKey"], "objects": n}))
