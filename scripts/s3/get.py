"""Copies what a loopback S3 bucket holds under a prefix to a directory, for the readers that
have no S3 client of their own here (pyspark's wheel has no hadoop-aws; DuckDB's httpfs is
an extension downloaded at run time): tests/integration/fleet.rs. The key is read from
AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Prints the keys copied, one per line.

    python scripts/s3/get.py ENDPOINT BUCKET PREFIX DEST
"""
import os
import sys

import boto3

endpoint, bucket, prefix, dest = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
    for o in page.get("Contents", []):
        key = o["Key"]
        path = os.path.join(dest, os.path.relpath(key, prefix))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file(bucket, key, path)
        print(key)
