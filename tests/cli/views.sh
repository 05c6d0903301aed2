# views.sh - the statements that read a store's SQL views for
# views_check.py, in each store's dialect: views_select DIALECT [PREFIX]
# prints three SELECTs (facts, relations, entities), one a line, each
# giving one tab-separated line a row: the kind, then views_check.py's
# COLUMNS, each NULL, an integer's digits or a string's bytes in hex.
# DIALECT is sqlite, mysql or postgres; PREFIX goes before each view's
# name (a database or schema and a dot on MySQL and PostgreSQL).

views_columns_fact="tenant subject predicate value value_text valid_from valid_from_text valid_to valid_to_text asserted_by_source asserted_by closed_by_source closed_by"
views_columns_relation="tenant subject relation object linked valid_from valid_from_text valid_to valid_to_text asserted_by_source asserted_by closed_by_source closed_by"
views_columns_entity="tenant subject kind first_seen first_seen_text last_seen last_seen_text"

# views_cell DIALECT COLUMN: the SQL of one cell
views_cell() {
	case "$2" in
	linked | valid_from | valid_to | first_seen | last_seen)
		case "$1" in
		postgres) echo "coalesce($2::text, 'NULL')" ;;
		*) echo "coalesce($2, 'NULL')" ;;
		esac
		;;
	*)
		case "$1" in
		sqlite) echo "CASE WHEN $2 IS NULL THEN 'NULL' ELSE hex($2) END" ;;
		mysql) echo "coalesce(HEX($2), 'NULL')" ;;
		postgres) echo "coalesce(encode(convert_to($2, 'UTF8'), 'hex'), 'NULL')" ;;
		esac
		;;
	esac
}

views_select() {
	local dialect=$1 prefix=${2:-} kind view col cells tab
	case "$dialect" in
	sqlite) tab="char(9)" ;;
	postgres) tab="E'\\t'" ;;
	esac
	for kind in fact relation entity; do
		case "$kind" in
		fact) view=facts ;;
		relation) view=relations ;;
		entity) view=entities ;;
		esac
		[ "$dialect" = sqlite ] || view=keel_$view
		local columns_var=views_columns_$kind sep=", "
		[ "$dialect" = sqlite ] && sep=" || $tab || "
		cells="'$kind'"
		# a header the checker skips (the client prints one)
		[ "$dialect" = mysql ] && cells="'$kind' AS kind"
		for col in ${!columns_var}; do
			cells="$cells$sep$(views_cell "$dialect" "$col")"
		done
		# the mariadb client separates columns with tabs itself (and
		# would escape one inside a column)
		if [ "$dialect" = postgres ]; then
			echo "SELECT concat_ws($tab, $cells) FROM $prefix$view;"
		else
			echo "SELECT $cells FROM $prefix$view;"
		fi
	done
}
