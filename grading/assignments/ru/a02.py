"""Задание 2 по-русски (grading/assignments/a02.py): headless-сервис, ответы DNS и постоянные имена подов StatefulSet."""
from grading.build_source import Translation

TRANSLATION = Translation(
    text={
        "013788f9": "Задание 2: headless-сервисы и DNS",
        "ca92d217": """
Обычный сервис получает один виртуальный IP, и DNS отвечает на его имя этим IP; пакеты к нему
переписывает ядро по правилам, которые пишет kube-proxy. У *headless*-сервиса (`clusterIP: None`) нет ни виртуального IP, ни правил kube-proxy —
DNS отвечает адресами самих готовых подов. Это discovery без проксирования, и именно он даёт каждому поду
StatefulSet собственное постоянное имя.""",
        "939900a9": """
Ячейка ниже запускает три пода `db` за обычным ClusterIP-сервисом и спрашивает у DNS `db`, как это сделал бы
`kubectl run -it --rm dnsutils --image=registry.k8s.io/e2e-test-images/jessie-dnsutils:1.7 -- nslookup db`.
Заметь: адрес один, и это ClusterIP сервиса.""",
        # Exercise 1
        "f024129f": """
## Упражнение 1: сделай `db` headless (3 балла)

Преврати сервис `db` в headless (`clusterIP: None`), сохранив его селектор и порт. Сначала попробуй `lab.apply` с
новым манифестом и прочитай ответ API-сервера: `clusterIP` неизменяем, так что сервис придётся удалить и создать
заново. Дождись, пока в его слайсах снова будут три пода.""",
        # Exercise 2
        "ef5edc9d": """
## Упражнение 2: что DNS говорит теперь (2 балла)

Запиши в `answer` результат `lab.nslookup("db")`, выполненного из временного пода в namespace `default`.
Сравни его адреса с IP подов (`lab.get("pods", selector="app=db")`).""",
        # Exercise 3
        "88b61008": """
## Упражнение 3: StatefulSet и его имена (2 балла)

Создай headless-сервис `web` (селектор `app: web`, порт 80 с именем `http`) и StatefulSet `web` с
`serviceName: web` и 3 репликами `nginx`. StatefulSet запускает поды по одному, по порядку, и каждый — только когда
предыдущий стал Ready. Дождись, пока все три станут готовыми эндпоинтами `web` (поставь ожиданию таймаут побольше,
`timeout=120`).""",
        # Exercise 4
        "f56e7704": """
## Упражнение 4: один под — одно имя (3 балла)

У каждого пода StatefulSet есть собственное DNS-имя `<под>.<сервис>.<namespace>.svc.<домен кластера>`.
Запиши в `pod_fqdn` полное имя своего пода (`task.name_pod`; домен кластера — `cluster.local`), а в
`pod_answer` — ответ `lab.nslookup` на короткое имя `<под>.web` (его дополняет список поиска из resolv.conf
пода).""",
        # Exercise 5
        "32b67bd8": """
## Упражнение 5: имя переживает под (2 балла)

Удали под, который выпал тебе для перезапуска (`task.restart_pod`), через `lab.delete("pod", ...)` и дождись, пока StatefulSet
вернёт новый под с тем же именем и тот станет Ready. У нового пода то же имя и то же DNS-имя. Запиши в
`back_answer` результат `lab.nslookup` для его короткого имени `<под>.web`, когда он вернётся.""",
    },
    code={
        "# stands in for a database": "# вместо базы данных",
        "# clusterIP cannot change on a live Service: delete it, then create it again.":
            "# clusterIP у живого сервиса не меняется: удали его, потом создай заново.",
        '"the slices of a headless Service carry the label service.kubernetes.io/headless: is db really headless?"':
            '"у слайсов headless-сервиса есть метка service.kubernetes.io/headless; точно ли db headless?"',
        '"pod_fqdn should be a string"': '"в pod_fqdn должна быть строка"',
        'f"{pod_fqdn!r} is not the full name of {task.name_pod}: <pod>.<service>.<namespace>.svc.cluster.local"':
            'f"{pod_fqdn!r} — не полное имя {task.name_pod}; полное имя — <под>.<сервис>.<namespace>.svc.cluster.local"',
        '"db has no EndpointSlice, so no slice carries the label: a check over no slices would prove nothing"':
            '"у db нет ни одного EndpointSlice, так что метку нести некому: проверка по пустому набору слайсов '
            'ничего не доказывает"',
    },
)
