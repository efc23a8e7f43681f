#!/bin/bash
# The entrypoint of a test image (tests/integration/test_mysql_docker.py builds it on layerbench's MySQL 9.7 image,
# which holds mysqld and no client): it follows the contract of the docker-library mysql and mariadb images'
# docker-entrypoint.sh as their documentation gives it, so layerbench's `image:` support is tested without a
# registry. Honoured: MYSQL_ROOT_PASSWORD / MARIADB_ROOT_PASSWORD (and their _FILE forms), MYSQL_ALLOW_EMPTY_PASSWORD /
# MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MYSQL_ROOT_HOST / MARIADB_ROOT_HOST (default %), MYSQL_DATABASE /
# MARIADB_DATABASE, /etc/mysql/conf.d/*.cnf (read by mysqld through /etc/mysql/my.cnf), the *.sql files of
# /docker-entrypoint-initdb.d (run once, as root, on an empty datadir), a command that starts with an option is
# given to mysqld. Without a client, the set-up SQL runs through `mysqld --initialize-insecure --init-file`, so
# an initdb.d file holds statements one per line (layerbench's does).
set -eo pipefail
shopt -s nullglob

die() { echo "[Entrypoint] ERROR: $*" >&2; exit 1; }

file_env() {  # VAR: its value, or the content of the file VAR_FILE names (never both)
	local var="$1" file="${1}_FILE"
	if [ -n "${!var:-}" ] && [ -n "${!file:-}" ]; then die "both $var and $file are set (but are exclusive)"; fi
	if [ -n "${!file:-}" ]; then export "$var"="$(< "${!file}")"; fi
	unset "$file"
}

sql_string() {  # $1 as the inside of an SQL string literal
	local text=${1//\\/\\\\}
	echo "${text//\'/\\\'}"
}

if [ "${1:0:1}" = '-' ]; then set -- mysqld "$@"; fi
if [ "$1" != 'mysqld' ]; then exec "$@"; fi

for name in ROOT_PASSWORD ROOT_HOST DATABASE; do
	file_env "MYSQL_$name"
	file_env "MARIADB_$name"
	maria="MARIADB_$name"
	if [ -n "${!maria:-}" ]; then export "MYSQL_$name"="${!maria}"; fi
done
: "${MYSQL_ALLOW_EMPTY_PASSWORD:=${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:-}}"
: "${MYSQL_ROOT_HOST:=%}"

DATADIR=/var/lib/mysql
mkdir -p "$DATADIR" /var/run/mysqld
find "$DATADIR" /var/run/mysqld -maxdepth 0 \! -user mysql -exec chown mysql:mysql '{}' +

if [ ! -d "$DATADIR/mysql" ]; then
	if [ -z "$MYSQL_ROOT_PASSWORD" ] && [ -z "$MYSQL_ALLOW_EMPTY_PASSWORD" ]; then
		die "database is uninitialized and no password option is given: set MYSQL_ROOT_PASSWORD or MYSQL_ALLOW_EMPTY_PASSWORD"
	fi
	setup=/var/run/mysqld/setup.sql
	( umask 077; : > "$setup" )
	chown mysql:mysql "$setup"
	password=$(sql_string "$MYSQL_ROOT_PASSWORD")
	{
		echo "ALTER USER 'root'@'localhost' IDENTIFIED BY '$password';"
		if [ "$MYSQL_ROOT_HOST" != 'localhost' ]; then
			echo "CREATE USER 'root'@'$MYSQL_ROOT_HOST' IDENTIFIED BY '$password';"
			echo "GRANT ALL ON *.* TO 'root'@'$MYSQL_ROOT_HOST' WITH GRANT OPTION;"
		fi
		if [ -n "$MYSQL_DATABASE" ]; then echo "CREATE DATABASE IF NOT EXISTS \`$MYSQL_DATABASE\`;"; fi
		for f in /docker-entrypoint-initdb.d/*; do
			case "$f" in
				*.sql) echo "[Entrypoint] running $f" >&2; grep -v '^\s*$' "$f" ;;
				*) echo "[Entrypoint] ignoring $f" >&2 ;;
			esac
		done
	} >> "$setup"
	echo "[Entrypoint] initializing database files" >&2
	"$@" --initialize-insecure --init-file="$setup"
	rm -f "$setup"
	echo "[Entrypoint] init process done, ready for start up" >&2
fi
exec "$@"
