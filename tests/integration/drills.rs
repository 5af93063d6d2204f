//! Fault drills on real `fleetyard` processes (the binary this suite was built with) over the
//! machine's PostgreSQL and RabbitMQ: processes killed with SIGKILL, the broker refused and
//! partitioned through a TCP proxy of the tests' own, and a scale-out run. The short forms run
//! with the suite; `./tox.sh drills` runs them at full length (a partition of a minute, the
//! scale-out run of 1,000 clusters).

mod api_kill;
mod broker_outage;
mod bus;
mod conductor_kill;
mod db;
mod db_under_load;
mod graceful_stop;
mod process;
mod rolling_kill;
mod scale_out;
