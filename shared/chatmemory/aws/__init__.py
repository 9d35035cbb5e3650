"""What runs only on AWS and is no Lambda handler: the streaming endpoint behind a Function URL
(started by the Lambda Web Adapter) and the bearer-token verification it needs."""
